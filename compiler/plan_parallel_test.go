package compiler

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/porch-pipelines/porch/compiler/plan"
)

func TestPlanParallel(t *testing.T) {
	p := compileOK(t, "parallel.yml", Options{})
	require.Equal(t, []string{"score", "defaults", "from_component"}, stepNames(p.Pipeline.Steps))
	score := step(t, p.Pipeline.Steps, "score")
	assert.Equal(t, plan.StepParallel, score.Type)
	assert.Nil(t, score.Command)
	require.NotNil(t, score.Parallel)
	assert.Equal(t, "cpu-cluster", score.Compute)
	assert.Equal(t, "mltable", input(t, score.Inputs, "data").Type)
	assert.Equal(t, plan.Value{Kind: plan.ValueParentInput, Input: "table"}, input(t, score.Inputs, "data").Value)

	par := *score.Parallel
	args := par.Task.ProgramArguments
	par.Task.ProgramArguments = plan.Template{}
	assert.Equal(t, plan.Parallel{
		InputData:                 "data",
		MiniBatchSize:             "1mb",
		PartitionKeys:             []string{"Store", "Brand"},
		MaxConcurrencyPerInstance: 3,
		Task: plan.ParallelTask{Code: abs(t, "parallel_src"), EntryScript: "score.py",
			Environment: "azureml:AzureML-sklearn-1.5@latest", AppendRowTo: "scores",
			Env: &plan.Environment{Image: "mcr.microsoft.com/azureml/curated/sklearn-1.5:latest", Ref: "azureml:AzureML-sklearn-1.5@latest"}},
		EnvironmentVariables:    map[string]string{"A": "1", "B": "true"},
		Resources:               plan.Resources{InstanceCount: 2, InstanceType: "big"},
		Retry:                   plan.ParallelRetry{MaxRetries: 0, TimeoutSeconds: 120},
		MiniBatchErrorThreshold: 4,
		// The flags in program_arguments win over the YAML keys.
		ErrorThreshold:                  7,
		AllowedFailedPercent:            30,
		LoggingLevel:                    "WARNING",
		TaskOverheadTimeoutSeconds:      45,
		ProgressUpdateTimeoutSeconds:    90,
		FirstTaskCreationTimeoutSeconds: 300,
		// Written --resource_monitor_interva, as argparse abbreviations go.
		ResourceMonitorIntervalSeconds: 20,
		CopyLogsToParent:               true,
	}, par)
	// Porch's flags and their values are gone; the rest keeps its order.
	assert.Equal(t, "--model ${{inputs.model}} $[[--threshold ${{inputs.threshold}}]] --out ${{outputs.scores}}", args.Source)
	assert.Equal(t, []plan.Part{
		{Text: "--model "}, {Ref: &plan.Ref{Kind: plan.RefInput, Name: "model"}}, {Text: " "},
		{Optional: []plan.Part{{Text: "--threshold "}, {Ref: &plan.Ref{Kind: plan.RefInput, Name: "threshold"}}}},
		{Text: " --out "}, {Ref: &plan.Ref{Kind: plan.RefOutput, Name: "scores"}},
	}, args.Parts)
}

func TestPlanParallelDefaults(t *testing.T) {
	p := compileOK(t, "parallel.yml", Options{})
	d := step(t, p.Pipeline.Steps, "defaults")
	assert.Equal(t, &plan.Parallel{
		InputData:                       "folder",
		Task:                            plan.ParallelTask{Code: abs(t, "parallel_src"), EntryScript: "score.py", ProgramArguments: plan.Template{Parts: []plan.Part{}}},
		Resources:                       plan.Resources{InstanceCount: 1},
		Retry:                           plan.ParallelRetry{MaxRetries: 2, TimeoutSeconds: 60},
		MiniBatchErrorThreshold:         -1,
		ErrorThreshold:                  -1,
		AllowedFailedPercent:            100,
		LoggingLevel:                    "INFO",
		TaskOverheadTimeoutSeconds:      30,
		FirstTaskCreationTimeoutSeconds: 600,
		ResourceMonitorIntervalSeconds:  600,
	}, d.Parallel)
	assert.Equal(t, "uri_folder", input(t, d.Inputs, "folder").Type)
}

func TestPlanParallelComponent(t *testing.T) {
	p := compileOK(t, "parallel.yml", Options{})
	s := step(t, p.Pipeline.Steps, "from_component")
	assert.Equal(t, plan.StepParallel, s.Type)
	assert.Equal(t, "Score files", s.DisplayName)
	assert.Equal(t, "gpu", s.Compute)
	assert.Equal(t, []string{"score"}, s.DependsOn)
	assert.Equal(t, plan.Value{Kind: plan.ValueStepOutput, Step: "score", Output: "scores"}, input(t, s.Inputs, "data").Value)
	assert.Equal(t, plan.Value{Kind: plan.ValueLiteral, Literal: "2"}, input(t, s.Inputs, "scale").Value)
	require.Len(t, s.Outputs, 1)
	assert.Equal(t, "out", s.Outputs[0].Name)

	par := s.Parallel
	require.NotNil(t, par)
	assert.Equal(t, "data", par.InputData)
	assert.Equal(t, "3", par.MiniBatchSize, "the step overrides the component's mini_batch_size")
	assert.Equal(t, 2, par.MaxConcurrencyPerInstance)
	assert.Equal(t, "ERROR", par.LoggingLevel)
	assert.Equal(t, plan.ParallelRetry{MaxRetries: 5, TimeoutSeconds: 10}, par.Retry, "retry settings merge key by key")
	assert.Equal(t, 1, par.ErrorThreshold, "--err abbreviates --error_threshold and wins over error_threshold: 3")
	assert.Equal(t, map[string]string{"C": "x"}, par.EnvironmentVariables)
	assert.Equal(t, abs(t, "parallel_src"), par.Task.Code, "code resolves against the component file's folder")
	assert.Equal(t, "image python:3.11", par.Task.Environment)
	assert.Equal(t, "out", par.Task.AppendRowTo)
	assert.Equal(t, "--scale ${{inputs.scale}} --out ${{outputs.out}}", par.Task.ProgramArguments.Source)
	assert.Equal(t, []string{"cpu-cluster", "gpu"}, p.Computes())
}

func TestMatchFlag(t *testing.T) {
	for word, want := range map[string]string{
		"--error_threshold":           "--error_threshold",
		"--resource_monitor_interva":  "--resource_monitor_interval",
		"--e":                         "--error_threshold",
		"--c":                         "--copy_logs_to_parent",
		"--":                          "",
		"---":                         "",
		"-e":                          "",
		"--model":                     "",
		"--error_threshold_x":         "",
		"--first_task_creation_timeo": "--first_task_creation_timeout",
	} {
		assert.Equal(t, want, matchFlag(word), word)
	}
	// A user's own flag that abbreviates a porch flag is porch's, as it
	// is for Azure ML's runner (argparse's allow_abbrev).
	assert.Equal(t, "--allowed_failed_percent", matchFlag("--a"))
}

func TestProgramArguments(t *testing.T) {
	for src, want := range map[string]string{
		"--error_threshold 5":                    "",
		"--x 1 --error_threshold=5 --b 2":        "--x 1 --b 2",
		"--error_threshold -1 --x":               "--x",
		`--x "y z" --logging_level 'debug' --b`:  `--x "y z" --b`,
		"--x ${{inputs.a}} --allowed 5":          "--x ${{inputs.a}}",
		"$[[--e ${{inputs.a}}]] --e 3":           "$[[--e ${{inputs.a}}]]",
		"--err${{inputs.a}} 3":                   "--err${{inputs.a}} 3",
		"  --model m  ":                          "  --model m  ",
		"--model m\n--task_overhead_timeout 9\n": "--model m\n",
	} {
		p := newParser(context.Background(), nil, Limits{})
		tmpl, _, _ := p.parseProgramArguments(&scalarAST{Value: src, Pos: plan.Pos{File: "f.yml", Line: 1, Col: 1}})
		assert.False(t, p.list.HasErrors(), "%q: %s", src, p.list.Error())
		assert.Equal(t, want, tmpl.Source, src)
	}
}
