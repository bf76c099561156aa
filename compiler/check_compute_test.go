package compiler

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/porch-pipelines/porch/compiler/plan"
)

// computeCatalog has two computes and one applied instance type.
var computeCatalog = &plan.Catalog{
	Computes: []plan.Compute{
		{Name: "cpu-cluster", Type: plan.ComputeAML, Size: plan.DefaultSize, Tier: plan.TierDedicated, MaxInstances: 4},
		{Name: "k8s", Type: plan.ComputeKubernetes, Namespace: "default"},
	},
	InstanceTypes: []plan.InstanceType{{Name: "small", Requests: plan.ResourceList{MilliCPU: 100, MemoryBytes: 1 << 30}}},
}

// TestComputeDiagnostics checks steps' computes and instance types against
// a catalogue with computes: unknown ones are positioned errors with a
// did-you-mean; serverless, local and defaultinstancetype always exist.
func TestComputeDiagnostics(t *testing.T) {
	for _, name := range []string{"compute", "instance_type"} {
		t.Run(name, func(t *testing.T) {
			file := filepath.Join("testdata", "TestComputeDiagnostics", name+".yml")
			p, diags := Compile(file, Options{Catalog: computeCatalog})
			assert.Nil(t, p)
			assertGolden(t, file, diags, "TestComputeDiagnostics")
		})
	}
}

// TestComputesUncheckedWithoutRegisteredComputes keeps porch working
// without a catalogue, or with one that has no computes: a compute name
// is then only the task queue its workers serve.
func TestComputesUncheckedWithoutRegisteredComputes(t *testing.T) {
	file := filepath.Join("testdata", "TestComputeDiagnostics", "instance_type.yml")
	for _, cat := range []*plan.Catalog{nil, {InstanceTypes: computeCatalog.InstanceTypes}} {
		p, diags := Compile(file, Options{Catalog: cat})
		require.False(t, diags.HasErrors(), "%s", diags.Error())
		assert.Equal(t, "gpu-cluster", step(t, p.Pipeline.Steps, "train").Compute)
		assert.Equal(t, "smal", step(t, p.Pipeline.Steps, "train").Command.Resources.InstanceType)
	}
}
