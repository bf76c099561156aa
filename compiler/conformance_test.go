package compiler

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/porch-pipelines/porch/compiler/plan"
)

// examplesDir is the azureml-examples checkout shared next to the repository.
var examplesDir = filepath.Join("..", "..", "shared", "azureml-examples")

// pipelineFiles lists the YAML files under dir whose top-level type is
// pipeline or sweep, or whose top-level component: names a file.
func pipelineFiles(t testing.TB, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() || (!strings.HasSuffix(path, ".yml") && !strings.HasSuffix(path, ".yaml")) {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		var top struct {
			Type      string `yaml:"type"`
			Component any    `yaml:"component"`
		}
		if yaml.Unmarshal(data, &top) != nil {
			return nil
		}
		if _, ok := top.Component.(string); top.Type == "pipeline" || top.Type == "sweep" || ok {
			out = append(out, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(out)
	return out
}

// quotedRE matches the quoted names in a summary, to group refusals by reason.
var quotedRE = regexp.MustCompile(`"[^"]*"|[0-9]+`)

// reasonOf is a diagnostic's summary with names blanked: its reason.
func reasonOf(d Diagnostic) string {
	return quotedRE.ReplaceAllString(d.Summary, "…")
}

func TestConformance(t *testing.T) {
	if _, err := os.Stat(examplesDir); err != nil {
		t.Skipf("azureml-examples not found at %s", examplesDir)
	}
	files := pipelineFiles(t, examplesDir)
	compiled, refused, hello := 0, 0, 0
	reasons := map[string]int{}
	for _, f := range files {
		p, diags := Compile(f, Options{})
		for _, d := range diags {
			if d.Pos.File == "" || d.Pos.Line == 0 || d.Detail == "" {
				t.Errorf("%s: diagnostic without a file, a line or advice: %s", f, d.Summary)
			}
		}
		if p != nil {
			compiled++
			if strings.HasPrefix(filepath.Base(f), "hello-pipeline") {
				hello++
			}
			continue
		}
		refused++
		for _, d := range diags {
			if d.Severity != Error {
				continue
			}
			reasons[reasonOf(d)]++
		}
		if strings.Contains(f, "hello-pipeline") {
			t.Errorf("%s must compile:\n%s", f, diags.Error())
		}
	}
	// cli/jobs/basics holds 14 hello-pipeline*.yml, all plain command steps.
	if hello != 14 {
		t.Errorf("compiled %d hello-pipeline*.yml, want 14", hello)
	}
	// 39 compiled before porch knew parallel and sweep steps, the 4 sweep
	// examples (TestConformanceSweep) compiled then, and so does one that
	// sets an input its component does not declare (a warning, as in
	// Azure ML), and the 5 parallel examples, whose entry scripts the
	// shared copy holds. Six of these read their data from the web or
	// Azure blob storage (https:// and wasbs:// URIs), which porch reads
	// too since it reaches Azure Storage: 4c_web_url_input, 6c_r_iris,
	// tensorflow-image-segmentation (two inputs) and three sweep examples.
	// The densenet example (which binds "224" to an input whose enum is
	// True, False: a warning, as Azure ML's client does not check enums)
	// is refused all the same: the shared copy lacks its components' conda
	// files, which porch reads to build their environments.
	want := 39 + len(sweepExamples) + 1 + len(parallelExamples)
	if compiled != want || reasons["entry script … does not exist"] != 0 {
		t.Errorf("compiled %d files and refused %d for missing entry scripts, want %d and 0",
			compiled, reasons["entry script … does not exist"], want)
	}
	if web, blob := reasons["data …: porch cannot read https:// URIs"], reasons["data …: porch cannot read wasbs:// URIs"]; web != 0 || blob != 0 {
		t.Errorf("refused %d https:// and %d wasbs:// data paths, want none", web, blob)
	}
	t.Logf("files %d: compiled %d, refused-clearly %d; errors by reason:", len(files), compiled, refused)
	for _, r := range sortedKeysInt(reasons) {
		t.Logf("  %4d  %s", reasons[r], r)
	}
}

func sortedKeysInt(m map[string]int) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// parallelExamples are the azureml-examples pipelines with parallel steps.
var parallelExamples = []string{
	"cli/jobs/parallel/1a_oj_sales_prediction/pipeline.yml",
	"cli/jobs/parallel/2a_iris_batch_prediction/pipeline.yml",
	"cli/jobs/parallel/3a_mnist_batch_identification/pipeline.yml",
	"cli/jobs/pipelines/iris-batch-prediction-using-parallel/pipeline.yml",
	"cli/jobs/pipelines/mnist-batch-identification-using-parallel/pipeline.yml",
}

// TestConformanceParallel compiles the parallel examples as the shared
// copy of azureml-examples holds them, entry scripts included, and checks
// what their parallel steps say.
func TestConformanceParallel(t *testing.T) {
	if _, err := os.Stat(examplesDir); err != nil {
		t.Skipf("azureml-examples not found at %s", examplesDir)
	}
	plans := map[string]*plan.Plan{}
	for _, rel := range parallelExamples {
		f := filepath.Join(examplesDir, rel)
		p, diags := Compile(f, Options{})
		require.False(t, diags.HasErrors(), "%s:\n%s", rel, diags.Error())
		require.NotNil(t, p, rel)
		plans[rel] = p
	}
	iris := step(t, plans[parallelExamples[3]].Pipeline.Steps, "batch_prediction").Parallel
	require.NotNil(t, iris)
	assert.Equal(t, "input_data", iris.InputData)
	assert.Equal(t, "10kb", iris.MiniBatchSize)
	assert.Equal(t, plan.Resources{InstanceCount: 2}, iris.Resources)
	assert.Equal(t, 2, iris.MaxConcurrencyPerInstance)
	assert.Equal(t, "DEBUG", iris.LoggingLevel)
	assert.Equal(t, 5, iris.ErrorThreshold)
	assert.Equal(t, 30, iris.AllowedFailedPercent)
	assert.Equal(t, 1200, iris.TaskOverheadTimeoutSeconds)
	assert.Equal(t, 600, iris.ProgressUpdateTimeoutSeconds)
	assert.Equal(t, 20, iris.ResourceMonitorIntervalSeconds, "written --resource_monitor_interva")
	assert.True(t, iris.CopyLogsToParent)
	assert.Equal(t, "--model ${{inputs.score_model}}", iris.Task.ProgramArguments.Source)
	assert.Equal(t, "job_output_file", iris.Task.AppendRowTo)
	assert.Equal(t, "iris_prediction.py", iris.Task.EntryScript)

	oj := step(t, plans[parallelExamples[0]].Pipeline.Steps, "parallel_train")
	assert.Equal(t, []string{"partition_job"}, oj.DependsOn)
	assert.Equal(t, []string{"Store", "Brand"}, oj.Parallel.PartitionKeys)
	assert.Equal(t, "mltable", input(t, oj.Inputs, "data_source").Type)
	assert.Equal(t, map[string]string{"AZUREML_PARALLEL_EXAMPLE": "1a_yaml"}, oj.Parallel.EnvironmentVariables)
}

// sweepExamples are the azureml-examples files with sweep steps or jobs.
var sweepExamples = []string{
	"cli/jobs/basics/hello-sweep.yml",
	"cli/jobs/pipelines-with-components/pipeline_with_hyperparameter_sweep/pipeline.yml",
	"cli/jobs/single-step/lightgbm/iris/job-sweep.yml",
	"cli/jobs/single-step/scikit-learn/iris/job-sweep.yml",
}

// TestConformanceSweep compiles the sweep examples, standalone sweep jobs
// and a pipeline with a sweep step, as they are (their iris.csv is a
// wasbs:// or https:// URI), and checks what each plan says.
func TestConformanceSweep(t *testing.T) {
	if _, err := os.Stat(examplesDir); err != nil {
		t.Skipf("azureml-examples not found at %s", examplesDir)
	}
	plans := map[string]*plan.Plan{}
	for _, rel := range sweepExamples {
		p, diags := Compile(filepath.Join(examplesDir, rel), Options{})
		require.False(t, diags.HasErrors(), "%s:\n%s", rel, diags.Error())
		plans[rel] = p
	}
	hello := plans[sweepExamples[0]]
	assert.Equal(t, "hello-sweep-example", hello.Name)
	require.Len(t, hello.Pipeline.Steps, 1)
	s := hello.Pipeline.Steps[0]
	assert.Equal(t, plan.StepSweep, s.Type)
	assert.Equal(t, "sweep", s.Name)
	assert.Equal(t, plan.Objective{PrimaryMetric: "random_metric", Goal: plan.GoalMinimize}, s.Sweep.Objective)
	assert.Equal(t, plan.SweepLimits{MaxTotalTrials: 4, MaxConcurrentTrials: 2, TimeoutSeconds: 3600}, s.Sweep.Limits)
	assert.Equal(t, plan.Value{Kind: plan.ValueSearchSpace, Input: "B"}, input(t, s.Inputs, "B").Value)
	assert.Equal(t, plan.Value{Kind: plan.ValueParentInput, Input: "A"}, input(t, s.Inputs, "A").Value)

	sk := plans[sweepExamples[3]]
	assert.Equal(t, "cpu-cluster", sk.Settings.DefaultCompute)
	assert.Equal(t, "wasbs://datasets@azuremlexamples.blob.core.windows.net/iris.csv", input(t, sk.Pipeline.Inputs, "iris_csv").Value.Data.Path)
	assert.Equal(t, "cpu-cluster", sk.Pipeline.Steps[0].Compute)

	pl := plans[sweepExamples[1]]
	require.Equal(t, []string{"sweep_step", "predict_step"}, stepNames(pl.Pipeline.Steps))
	sweep := pl.Pipeline.Steps[0]
	assert.Equal(t, plan.StepSweep, sweep.Type)
	require.NotNil(t, sweep.Command)
	assert.Contains(t, sweep.Command.Template.Source, "--C ${{inputs.c_value}}")
	assert.Equal(t, plan.Value{Kind: plan.ValueSearchSpace, Input: "kernel"}, input(t, sweep.Inputs, "kernel").Value)
	assert.Equal(t, plan.Value{Kind: plan.ValueLiteral, Literal: "3"}, input(t, sweep.Inputs, "degree").Value)
	assert.Equal(t, []string{"model_output", "test_data"}, []string{sweep.Outputs[0].Name, sweep.Outputs[1].Name})
	assert.Equal(t, []string{"sweep_step"}, pl.Pipeline.Steps[1].DependsOn)
}
