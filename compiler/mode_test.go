package compiler

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/porch-pipelines/porch/compiler/plan"
)

// A binding's mode reaches the plan, also for a binding to another step's
// output, whose data carries the producing output's mode instead.
func TestInputModes(t *testing.T) {
	p, diags := Compile(filepath.Join("testdata", "TestInputModes", "pipeline.yml"), Options{})
	require.False(t, diags.HasErrors(), "%s", diags.Error())
	read := step(t, p.Pipeline.Steps, "read")

	copied := input(t, read.Inputs, "copied")
	assert.Equal(t, "download", copied.Mode)
	assert.Equal(t, plan.ValueStepOutput, copied.Value.Kind)
	assert.Equal(t, "", input(t, read.Inputs, "mounted").Mode)
	uri := input(t, read.Inputs, "uri")
	assert.Equal(t, "direct", uri.Mode)
	assert.Equal(t, "direct", uri.Value.Data.Mode)
}
