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
