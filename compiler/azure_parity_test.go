package compiler

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/porch-pipelines/porch/compiler/plan"
)

// planStep is what TestAzureAccepts looks at in a plan's step.
type planStep struct {
	Compute string
	Command *plan.Command
}

// compiles compiles the files' p.yml, requiring no error, and returns the
// plan's steps by name and the warnings' text.
func compiles(t *testing.T, files map[string]string) (map[string]planStep, string) {
	t.Helper()
	fs := map[string][]byte{}
	for k, v := range files {
		fs[k] = []byte(v)
	}
	p, diags := Compile("p.yml", Options{ReadFile: memFS(fs)})
	require.False(t, diags.HasErrors(), diags.Error())
	steps := map[string]planStep{}
	for _, s := range p.Pipeline.Steps {
		steps[s.Name] = planStep{s.Compute, s.Command}
	}
	return steps, diags.Error()
}

// TestAzureAccepts: what azure-ai-ml's loader accepts, porch accepts (issue
// 28, items 11 to 13), from Azure ML's own test files.
func TestAzureAccepts(t *testing.T) {
	t.Run("component without type", func(t *testing.T) {
		// tests/test_configs/components/component_no_version.yml
		_, warnings := compiles(t, map[string]string{
			"p.yml": "type: pipeline\njobs:\n  a:\n    component: ./c.yml\n",
			"c.yml": "$schema: https://azuremlschemas.azureedge.net/development/commandComponent.schema.json\n" +
				"name: atestcomponent\ncommand: >-\n  echo ${{outputs.output_path}}\nenvironment: azureml:AzureML-Minimal:2\n" +
				"outputs:\n  output_path:\n    type: uri_folder\n",
		})
		assert.Empty(t, warnings)
	})
	t.Run("distribution types in any case", func(t *testing.T) {
		steps, _ := compiles(t, map[string]string{"p.yml": "type: pipeline\njobs:\n" +
			"  a: {command: echo, environment: {image: python}, distribution: {type: Pytorch, process_count_per_instance: 2}}\n" +
			"  b: {command: echo, environment: {image: python}, distribution: {type: TensorFlow, worker_count: 2}}\n" +
			"  c: {command: echo, environment: {image: python}, distribution: {type: MPI}}\n"})
		assert.Equal(t, "pytorch", steps["a"].Command.Distribution.Type)
		assert.Equal(t, "tensorflow", steps["b"].Command.Distribution.Type)
		assert.Equal(t, "mpi", steps["c"].Command.Distribution.Type)
	})
	t.Run("default above max", func(t *testing.T) {
		// tests/test_configs/components/input_types_component.yml
		_, warnings := compiles(t, map[string]string{
			"p.yml": "type: pipeline\njobs:\n  a:\n    component: ./c.yml\n    inputs: {s: hi}\n",
			"c.yml": "type: command\nenvironment: {image: python}\ncommand: echo ${{inputs.s}} ${{inputs.n}}\ninputs:\n" +
				"  s: {type: string}\n  n:\n    type: number\n    min: 2\n    max: 8\n    default: 10\n",
		})
		assert.Contains(t, warnings, `c.yml:10:14: warning: component input "n": value "10" is above the maximum 8`)
	})
	t.Run("a number for an integer", func(t *testing.T) {
		// tests/test_configs/pipeline_jobs/helloworld_pipeline_job_inline_comps.yml
		steps, warnings := compiles(t, map[string]string{"p.yml": `type: pipeline
inputs:
  job_in_number: 10.01
jobs:
  inline:
    type: command
    inputs:
      component_in_number: ${{parent.inputs.job_in_number}}
    component:
      command: echo ${{inputs.component_in_number}}
      environment: azureml:AzureML-sklearn-0.24-ubuntu18.04-py37-cpu:1
      inputs:
        component_in_number: {type: integer, default: 10, optional: false}
`})
		assert.Contains(t, warnings, `p.yml:8:28: warning: input "component_in_number" of step "inline": pipeline input "job_in_number" value "10.01" is not a whole number`)
		assert.NotNil(t, steps["inline"].Command)
	})
	t.Run("compute as an ARM id", func(t *testing.T) {
		steps, _ := compiles(t, map[string]string{"p.yml": "type: pipeline\njobs:\n  a:\n    command: echo\n    environment: {image: python}\n" +
			"    compute: azureml:/subscriptions/s/resourceGroups/r/providers/Microsoft.MachineLearningServices/workspaces/w/computes/gpu-cluster\n"})
		assert.Equal(t, "gpu-cluster", steps["a"].Compute)
	})
	t.Run("parameter group members declared flat", func(t *testing.T) {
		steps, _ := compiles(t, map[string]string{"p.yml": "type: pipeline\ninputs:\n  group.x: 3\njobs:\n  a:\n" +
			"    command: echo ${{inputs.group.x}}\n    environment: {image: python}\n    inputs:\n      group.x: ${{parent.inputs.group.x}}\n"})
		assert.Equal(t, "group.x", steps["a"].Command.Template.Parts[1].Ref.Name)
	})
}

// TestNotPipelineRoot: a component or a command job given where a pipeline
// job is expected says which it is and what to do.
func TestNotPipelineRoot(t *testing.T) {
	for src, want := range map[string]string{
		"command: echo hi\nenvironment: {image: python}\n":                                                                       "p.yml:1:1: error: file is a command component, not a pipeline job",
		"type: command\nname: c\ncommand: echo hi\nenvironment: {image: python}\n":                                               "p.yml:1:7: error: file is a command component, not a pipeline job",
		"type: parallel\ntask: {type: run_function}\n":                                                             "p.yml:1:7: error: file is a parallel component, not a pipeline job",
		"command: python train.py\nenvironment: {image: python}\ncompute: azureml:cpu\n":                                         "p.yml:1:1: error: file is a command job, not a pipeline job",
		"$schema: https://azuremlschemas.azureedge.net/latest/commandJob.schema.json\ntype: command\ncommand: x\n": "p.yml:2:7: error: file is a command job, not a pipeline job",
	} {
		_, diags := Compile("p.yml", Options{ReadFile: memFS(map[string][]byte{"p.yml": []byte(src)})})
		assert.Equal(t, want, strings.SplitN(diags.Error(), "\n", 2)[0], src)
	}
}

// TestExplicitDefaultCompute: a step's compute: serverless or local is the
// default queue, where settings.default_compute would send the step
// elsewhere (issue 28, item 15); a nested pipeline step's passes to its
// steps.
func TestExplicitDefaultCompute(t *testing.T) {
	files := map[string][]byte{
		"p.yml": []byte(`type: pipeline
settings:
  default_compute: azureml:cpu-cluster
jobs:
  none: {command: echo, environment: {image: python}}
  serverless: {command: echo, environment: {image: python}, compute: serverless}
  azureml_serverless: {command: echo, environment: {image: python}, compute: azureml:serverless}
  local: {command: echo, environment: {image: python}, compute: local}
  named: {command: echo, environment: {image: python}, compute: azureml:gpu}
  nested: {type: pipeline, component: ./sub.yml, compute: serverless}
  nested_default: {type: pipeline, component: ./sub.yml}
`),
		"sub.yml": []byte("type: pipeline\njobs:\n  inner: {command: echo, environment: {image: python}}\n  own: {command: echo, environment: {image: python}, compute: azureml:gpu}\n"),
	}
	p, diags := Compile("p.yml", Options{ReadFile: memFS(files)})
	require.False(t, diags.HasErrors(), diags.Error())
	got := map[string]string{}
	for _, s := range p.Pipeline.Steps {
		got[s.Name] = s.Compute
		if s.Pipeline != nil {
			for _, c := range s.Pipeline.Steps {
				got[s.Name+"/"+c.Name] = c.Compute
			}
		}
	}
	assert.Equal(t, map[string]string{
		"none": "cpu-cluster", "serverless": "", "azureml_serverless": "", "local": "", "named": "gpu",
		"nested": "", "nested/inner": "", "nested/own": "gpu",
		"nested_default": "cpu-cluster", "nested_default/inner": "cpu-cluster", "nested_default/own": "gpu",
	}, got)
}
