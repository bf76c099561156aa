package compiler

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// is_deterministic: false, on a step or its component, reaches the plan:
// such a step never reuses an earlier run's outputs.
func TestIsDeterministic(t *testing.T) {
	p, diags := Compile(filepath.Join("testdata", "TestIsDeterministic", "pipeline.yml"), Options{})
	require.False(t, diags.HasErrors(), "%s", diags.Error())
	steps := p.Pipeline.Steps
	assert.False(t, step(t, steps, "plain").NotDeterministic)
	assert.True(t, step(t, steps, "inline").NotDeterministic)
	assert.False(t, step(t, steps, "stated").NotDeterministic)
	assert.True(t, step(t, steps, "from_component").NotDeterministic)
}

// is_deterministic: false on a pipeline component, or on the step that
// uses one, applies to every step inside it, however deeply nested, as
// Azure ML never reuses a pipeline node that is not deterministic: none
// of its child jobs is reused either. The same component used elsewhere
// stays deterministic.
func TestIsDeterministicOnAPipelineComponentReachesItsSteps(t *testing.T) {
	p, diags := Compile(filepath.Join("testdata", "TestIsDeterministic", "pipeline.yml"), Options{})
	require.False(t, diags.HasErrors(), "%s", diags.Error())
	assert.Empty(t, diags, "is_deterministic is a known key of a pipeline component")
	steps := p.Pipeline.Steps
	random := step(t, steps, "random_pipeline")
	assert.True(t, random.NotDeterministic)
	assert.True(t, step(t, random.Pipeline.Steps, "draw").NotDeterministic)
	inner := step(t, random.Pipeline.Steps, "inner")
	assert.True(t, step(t, inner.Pipeline.Steps, "count").NotDeterministic, "a pipeline inside one that is not deterministic")
	says := step(t, steps, "step_says")
	assert.True(t, step(t, says.Pipeline.Steps, "count").NotDeterministic, "is_deterministic: false on the pipeline step")
	steady := step(t, steps, "steady")
	assert.False(t, steady.NotDeterministic)
	assert.False(t, step(t, steady.Pipeline.Steps, "count").NotDeterministic)
}
