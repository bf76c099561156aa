package cli

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/porch-pipelines/porch/compiler"
)

// TestSummaryParallel pins how -o summary shows parallel steps, using the
// compiler's own parallel test pipeline.
func TestSummaryParallel(t *testing.T) {
	p, diags := compiler.Compile(filepath.Join("..", "..", "compiler", "testdata", "TestPlan", "parallel.yml"), compiler.Options{})
	require.False(t, diags.HasErrors(), diags.Error())
	var b bytes.Buffer
	writeSummary(&b, p)
	lines := strings.Split(b.String(), "\n")
	assert.Contains(t, lines, "parallel score: input_data data (mltable), partition_keys Store,Brand, "+
		"2 instance(s) x 3 processes, retries 0, timeout 120s, entry_script score.py, append_row_to scores")
	assert.Contains(t, lines, "parallel defaults: input_data folder (uri_folder), mini_batch_size default, "+
		"1 instance(s) x cores processes, retries 2, timeout 60s, entry_script score.py")
	assert.Contains(t, lines, "parallel from_component: input_data data (uri_folder), mini_batch_size 3, "+
		"1 instance(s) x 2 processes, retries 5, timeout 10s, entry_script score.py, append_row_to out")
	assert.Regexp(t, `(?m)^score +parallel +cpu-cluster +-$`, b.String())
}

// TestSummarySweep pins how -o summary shows sweep steps, using the
// compiler's own sweep test pipeline.
func TestSummarySweep(t *testing.T) {
	p, diags := compiler.Compile(filepath.Join("..", "..", "compiler", "testdata", "TestPlan", "sweep.yml"), compiler.Options{})
	require.False(t, diags.HasErrors(), diags.Error())
	var b bytes.Buffer
	writeSummary(&b, p)
	lines := strings.Split(b.String(), "\n")
	assert.Contains(t, lines, "sweep tune: random sampling (seed 42, sobol, logbase e), minimize val_loss, "+
		"20 trials, 4 at a time, timeout 3600s, trial timeout 600s, parameters lr qloguniform(-6, -1, q 0.001), seed randint(5); "+
		"early termination bandit (slack_factor 0.1, every 2, delay 5)")
	assert.Contains(t, lines, "sweep inline: grid sampling, maximize acc, 1000 trials, 1000 at a time, timeout 5184000s, "+
		"parameters opt choice(adam, {name choice(sgd), lr choice(0.1, 0.01), nesterov choice(true)}); early termination none")
	assert.Contains(t, lines, "sweep nested: bayesian sampling, maximize acc, metric from step train, 1000 trials, 1000 at a time, "+
		"timeout 5184000s, parameters lr quniform(0.01, 0.5, q 0.01); early termination truncation_selection "+
		"(truncation 20%, excluding finished trials, every 1, delay 0)")
	assert.Regexp(t, `(?m)^tune +sweep +cpu-cluster +-$`, b.String())
	// Its compute is the pipeline input node, local: the default queue.
	assert.Regexp(t, `(?m)^  nested/train +command +- +-$`, b.String())
}
