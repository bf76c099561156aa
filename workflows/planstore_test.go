package workflows

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/porch-pipelines/porch/compiler"
)

// TestAStoredPlanReadsBackAsItWasAndNamesItsNestedPipelines encodes a plan
// as porch stores it, reads it back through its reference, finds a nested
// pipeline by its step's path, and refuses chunks that are not the plan
// the reference names.
func TestAStoredPlanReadsBackAsItWasAndNamesItsNestedPipelines(t *testing.T) {
	p, diags := compiler.Compile("testdata/nested.yaml", compiler.Options{})
	require.False(t, diags.HasErrors(), diags.Error())
	r := NewStartRequest(p, "nested-1", nil)
	require.NotNil(t, r.Input.Plan, "the start input names the plan")
	require.Empty(t, r.Input.Pipeline.Steps, "the start input does not carry the plan")

	var gz []byte
	for _, c := range r.stored.chunks {
		gz = append(gz, c...)
	}
	got, err := decodePlan(*r.Input.Plan, gz)
	require.NoError(t, err)
	require.Equal(t, p.Pipeline, got.Pipeline)

	var nested string
	for _, s := range p.Pipeline.Steps {
		if s.Pipeline != nil {
			nested = s.Path
		}
	}
	require.NotEmpty(t, nested, "testdata/nested.yaml has a nested pipeline")
	sub, ok := subPipeline(got.Pipeline, nested)
	require.True(t, ok)
	require.NotEmpty(t, sub.Steps)
	_, ok = subPipeline(got.Pipeline, "no-such-step")
	require.False(t, ok)

	other := *r.Input.Plan
	other.Hash = PlanChunkID("0", 0)
	_, err = decodePlan(other, gz)
	require.ErrorContains(t, err, "does not match its hash")
	_, err = decodePlan(*r.Input.Plan, gz[:len(gz)/2])
	require.Error(t, err, "a truncated plan is refused")
}
