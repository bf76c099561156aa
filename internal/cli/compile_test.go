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
