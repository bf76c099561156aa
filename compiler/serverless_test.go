package compiler

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/porch-pipelines/porch/compiler/plan"
)

// TestServerlessSteps checks what serverless steps carry: the requests of
// the VM size they name (with or without a catalogue), the serverless
// queue of an applied instance type they name, and nothing at all without
// a catalogue and an instance type, so that such a plan runs on the
// default queue as before.
func TestServerlessSteps(t *testing.T) {
	file := filepath.Join(t.TempDir(), "p.yml")
	require.NoError(t, os.WriteFile(file, []byte(`type: pipeline
jobs:
  plain:
    command: echo
  sized:
    compute: azureml:serverless
    command: echo
    resources:
      instance_type: Standard_E4s_v3
  named:
    compute: serverless
    command: echo
    resources:
      instance_type: small
  cluster:
    compute: azureml:cpu-cluster
    command: echo
`), 0o644))
	res := func(p *plan.Plan, name string) plan.Resources {
		return step(t, p.Pipeline.Steps, name).Command.Resources
	}
	e4 := &plan.Serverless{Requests: plan.ResourceList{MilliCPU: 4000, MemoryBytes: 32 << 30}, From: "Standard_E4s_v3"}

	p, diags := Compile(file, Options{})
	require.False(t, diags.HasErrors(), "%s", diags.Error())
	assert.Equal(t, plan.Resources{}, res(p, "plain"))
	assert.Equal(t, plan.Resources{InstanceType: "Standard_E4s_v3", Serverless: e4}, res(p, "sized"))
	assert.Equal(t, plan.Resources{InstanceType: "small"}, res(p, "named"), "without a catalogue, small is no known type")

	p, diags = Compile(file, Options{Catalog: computeCatalog})
	require.False(t, diags.HasErrors(), "%s", diags.Error())
	assert.Equal(t, plan.Resources{Serverless: &plan.Serverless{Requests: plan.NeedOf(plan.DefaultInstanceType()),
		From: plan.DefaultInstanceTypeName}}, res(p, "plain"))
	assert.Equal(t, plan.Resources{InstanceType: "Standard_E4s_v3", Serverless: e4}, res(p, "sized"),
		"a VM size is no error against a catalogue with computes")
	assert.Equal(t, plan.Resources{InstanceType: "small", TaskQueue: "porch-serverless-small"}, res(p, "named"))
	assert.Nil(t, res(p, "cluster").Serverless)
}
