package compiler

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/porch-pipelines/porch/compiler/plan"
)

// A step runs as its own identity, else its pipeline's: a nested
// pipeline's steps inherit the pipeline step's, a sweep's trials the
// sweep's, a parallel step the job's. managed_identity is managed.
func TestIdentities(t *testing.T) {
	p, diags := Compile(filepath.Join("testdata", "TestIdentities", "pipeline.yml"), Options{})
	require.False(t, diags.HasErrors(), "%s", diags.Error())
	for _, d := range diags {
		assert.NotContains(t, d.Summary, "identity", "identity keys are known")
	}
	steps := p.Pipeline.Steps
	assert.Equal(t, plan.JobIdentityManaged, step(t, steps, "own").JobIdentity())
	assert.Equal(t, plan.JobIdentityUser, step(t, steps, "inherited").JobIdentity())
	nested := step(t, steps, "nested")
	assert.Equal(t, "", nested.JobIdentity(), "a pipeline step runs no process")
	assert.Equal(t, plan.JobIdentityManaged, step(t, nested.Pipeline.Steps, "deep").JobIdentity())
	assert.Equal(t, plan.JobIdentityAMLToken, step(t, steps, "search").JobIdentity())
	assert.Equal(t, plan.JobIdentityUser, step(t, steps, "split").JobIdentity())
}
