package compiler

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/porch-pipelines/porch/compiler/plan"
)

// TestQueueSettingsDiagnostics pins the messages for queue_settings: an
// unknown tier or priority is a positioned error listing the valid ones,
// an unknown key a warning, and a pipeline job's own queue_settings a
// warning that they reach none of its steps.
func TestQueueSettingsDiagnostics(t *testing.T) {
	file := filepath.Join("testdata", "TestQueueSettingsDiagnostics", "bad.yml")
	p, diags := Compile(file, Options{})
	assert.Nil(t, p)
	assertGolden(t, file, diags, "TestQueueSettingsDiagnostics")
}

// TestStepsCarryTheirJobTier lowers queue_settings.job_tier, in any case,
// onto command, parallel and sweep steps (a sweep's trials run its
// command), leaves other steps without one, and marks the steps of a
// low_priority amlcompute.
func TestStepsCarryTheirJobTier(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "pipeline.yml")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "score.py"), []byte("def init():\n  pass\ndef run(b):\n  return b\n"), 0o644))
	require.NoError(t, os.WriteFile(file, []byte(`type: pipeline
jobs:
  spot:
    command: echo spot
    queue_settings: {job_tier: Spot, priority: High}
  plain:
    command: echo plain
    queue_settings: {job_tier: null}
  standard:
    command: echo standard
    queue_settings: {job_tier: standard}
  lowpri:
    compute: azureml:cheap
    command: echo cheap
  batch:
    type: parallel
    queue_settings: {job_tier: SPOT}
    inputs:
      data: {type: uri_folder, path: ./}
    input_data: ${{inputs.data}}
    mini_batch_size: "1"
    task:
      type: run_function
      code: ./
      entry_script: score.py
  tune:
    type: sweep
    queue_settings: {job_tier: spot}
    trial:
      command: echo ${{inputs.lr}}
      environment: {image: python}
      inputs:
        lr: {type: number}
    search_space:
      lr: {type: choice, values: [0.1]}
    objective: {primary_metric: acc, goal: maximize}
    limits: {max_total_trials: 1}
`), 0o644))
	cat := &plan.Catalog{Computes: []plan.Compute{
		{Name: "cheap", Type: plan.ComputeAML, Size: plan.DefaultSize, Tier: plan.TierLowPriority, MaxInstances: 2},
	}}
	p, diags := Compile(file, Options{Catalog: cat})
	require.False(t, diags.HasErrors(), "%s", diags.Error())
	steps := p.Pipeline.Steps
	assert.True(t, step(t, steps, "spot").Command.Resources.Spot())
	assert.Equal(t, plan.TierSpot, step(t, steps, "spot").Command.Resources.JobTier)
	assert.False(t, step(t, steps, "plain").Command.Resources.Spot())
	assert.Empty(t, step(t, steps, "plain").Command.Resources.JobTier)
	assert.Equal(t, "standard", step(t, steps, "standard").Command.Resources.JobTier)
	assert.False(t, step(t, steps, "standard").Command.Resources.Spot())
	assert.True(t, step(t, steps, "lowpri").Command.Resources.LowPriority)
	assert.True(t, step(t, steps, "lowpri").Command.Resources.Spot())
	assert.True(t, step(t, steps, "batch").Parallel.Resources.Spot())
	assert.True(t, step(t, steps, "tune").Command.Resources.Spot())
}
