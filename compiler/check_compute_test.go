package compiler

import (
	"os"
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

// TestStepsGetTheirComputesCores fills each step's cores per instance from
// its registered compute, for quotas: a VM size's vCPUs, or an instance
// type's CPU request rounded up, nested pipelines included; a kubernetes
// compute's steps are routed to their instance type's task queue.
func TestStepsGetTheirComputesCores(t *testing.T) {
	file := filepath.Join(t.TempDir(), "pipeline.yml")
	require.NoError(t, os.WriteFile(file, []byte(`type: pipeline
jobs:
  cluster:
    compute: azureml:cpu-cluster
    command: echo
    resources:
      instance_count: 3
  pod:
    compute: azureml:k8s
    command: echo
    resources:
      instance_type: big
  default_type:
    compute: azureml:k8s
    command: echo
  queue:
    command: echo
  nested:
    type: pipeline
    component: ./inner.yml
`), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(filepath.Dir(file), "inner.yml"), []byte(`type: pipeline
jobs:
  inner:
    compute: azureml:cpu-cluster
    command: echo
`), 0o644))
	cat := *computeCatalog
	cat.InstanceTypes = append(cat.InstanceTypes, plan.InstanceType{Name: "big", Requests: plan.ResourceList{MilliCPU: 2500, MemoryBytes: 1 << 30}})
	p, diags := Compile(file, Options{Catalog: &cat})
	require.False(t, diags.HasErrors(), "%s", diags.Error())
	res := func(steps []plan.Step, name string) plan.Resources { return step(t, steps, name).Command.Resources }
	assert.Equal(t, plan.Resources{InstanceCount: 3, Size: "Standard_DS3_v2", Cores: 4}, res(p.Pipeline.Steps, "cluster"))
	assert.Equal(t, plan.Resources{InstanceType: "big", Cores: 3, TaskQueue: "porch-compute-k8s-big"}, res(p.Pipeline.Steps, "pod"))
	assert.Equal(t, plan.Resources{Cores: 1, TaskQueue: "porch-compute-k8s-defaultinstancetype"}, res(p.Pipeline.Steps, "default_type"),
		"defaultinstancetype requests 100m")
	assert.Equal(t, plan.Resources{Serverless: &plan.Serverless{Requests: plan.NeedOf(plan.DefaultInstanceType()), From: "defaultinstancetype"}},
		res(p.Pipeline.Steps, "queue"), "a serverless step asks for defaultinstancetype's requests, and claims no quota")
	assert.Equal(t, 4, res(step(t, p.Pipeline.Steps, "nested").Pipeline.Steps, "inner").Cores)
	assert.Equal(t, []plan.ComputeQueue{
		{Compute: "", Queue: "porch"},
		{Compute: "cpu-cluster", Queue: "porch-compute-cpu-cluster"},
		{Compute: "k8s", Queue: "porch-compute-k8s-big"},
		{Compute: "k8s", Queue: "porch-compute-k8s-defaultinstancetype"},
	}, p.TaskQueues(), "the queues a run needs workers on")
}

// TestDevServerRunsUnregisteredComputesOnTheDefaultQueue: on a porch dev
// server, a step of a compute the catalogue does not hold runs on the
// default queue, which porch dev's worker serves, and keeps its compute's
// name; elsewhere it stays on its compute's queue.
func TestDevServerRunsUnregisteredComputesOnTheDefaultQueue(t *testing.T) {
	file := filepath.Join("..", "samples", "file-list", "pipeline.yml")
	p, diags := Compile(file, Options{Catalog: &plan.Catalog{}, DevServer: true})
	require.False(t, diags.HasErrors(), "%s", diags.Error())
	require.Equal(t, []plan.ComputeQueue{{Compute: "cpu-cluster", Queue: plan.DefaultTaskQueue}}, p.TaskQueues())
	for _, s := range p.Pipeline.Steps {
		if s.Parallel != nil {
			assert.False(t, s.Parallel.Resources.OnInstanceType(), s.Path)
		}
	}
	p, _ = Compile(file, Options{Catalog: &plan.Catalog{}})
	require.Equal(t, []plan.ComputeQueue{{Compute: "cpu-cluster", Queue: "porch-compute-cpu-cluster"}}, p.TaskQueues())
}
