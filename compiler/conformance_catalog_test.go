package compiler

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/porch-pipelines/porch/compiler/plan"
)

// examplesCatalog registers what the azureml-examples pipelines name with
// azureml:<name>@latest, as their READMEs tell users to register it: the
// components from their own files (az ml component create --file), the
// data assets as folders or files. porch has no model catalogue, so the two
// models of the batch-scoring example are registered as folders.
func examplesCatalog(t *testing.T) *plan.Catalog {
	t.Helper()
	cli := filepath.Join(examplesDir, "cli")
	component := func(name, file string) plan.ComponentAsset {
		path := filepath.Join(cli, file)
		src, err := os.ReadFile(path)
		require.NoError(t, err)
		return plan.ComponentAsset{Name: name, Version: "1", Source: string(src), Dir: filepath.Dir(path)}
	}
	e2e := "jobs/pipelines-with-components/basics/1b_e2e_registered_components/"
	return &plan.Catalog{
		Environments: []plan.EnvironmentAsset{
			{Name: "xgboost-sklearn-py38", Version: "1", Environment: plan.Environment{Image: "mcr.microsoft.com/azureml/openmpi4.1.0-ubuntu20.04"}},
		},
		Components: []plan.ComponentAsset{
			component("my_train", e2e+"train.yml"),
			component("my_score", e2e+"score.yml"),
			component("my_eval", e2e+"eval.yml"),
			component("uci_heart_prepare", "endpoints/batch/deploy-pipelines/batch-scoring-with-preprocessing/components/prepare/prepare.yml"),
		},
		Data: []plan.Asset{
			{Name: "local-folder-example", Version: "1", Type: "uri_folder", Path: filepath.Join(cli, "assets/data/sample-data")},
			{Name: "credit-default-reference", Version: "1", Type: "uri_file", Path: "/data/credit-default/reference.csv"},
			{Name: "heart-classifier-transforms", Version: "1", Type: "uri_folder", Path: "/models/heart-classifier-transforms"},
			{Name: "heart-classifier", Version: "1", Type: "uri_folder", Path: "/models/heart-classifier"},
		},
	}
}

// catalogExamples are the example files that compile only with
// examplesCatalog.
var catalogExamples = []string{
	"cli/jobs/pipelines-with-components/basics/1b_e2e_registered_components/pipeline-serverless.yml",
	"cli/jobs/pipelines-with-components/basics/1b_e2e_registered_components/pipeline.yml",
	"cli/jobs/pipelines-with-components/basics/4d_data_input/pipeline.yml",
}

// TestConformanceCatalog compiles every example twice, without and with
// examplesCatalog: the catalogue makes exactly catalogExamples compile,
// and every file that compiled without it still does.
func TestConformanceCatalog(t *testing.T) {
	if _, err := os.Stat(examplesDir); err != nil {
		t.Skipf("azureml-examples not found at %s", examplesDir)
	}
	cat := examplesCatalog(t)
	var gained []string
	for _, f := range pipelineFiles(t, examplesDir) {
		rel, err := filepath.Rel(examplesDir, f)
		require.NoError(t, err)
		without, _ := Compile(f, Options{})
		with, diags := Compile(f, Options{Catalog: cat})
		if without != nil {
			assert.NotNil(t, with, "%s compiles without a catalogue but not with one:\n%s", rel, diags.Error())
			continue
		}
		if with != nil {
			gained = append(gained, filepath.ToSlash(rel))
		}
	}
	assert.Equal(t, catalogExamples, gained)

	e2e := filepath.Join(examplesDir, catalogExamples[1])
	p, diags := Compile(e2e, Options{Catalog: cat})
	require.False(t, diags.HasErrors(), "%s", diags.Error())
	train := step(t, p.Pipeline.Steps, "train_job")
	assert.Equal(t, filepath.Join(mustAbs(t, filepath.Dir(e2e)), "train_src"), train.Command.Code)
	p, diags = Compile(filepath.Join(examplesDir, catalogExamples[2]), Options{Catalog: cat})
	require.False(t, diags.HasErrors(), "%s", diags.Error())
	hello := step(t, p.Pipeline.Steps, "python_hello_step")
	assert.Equal(t, &plan.Data{Type: "uri_folder", Path: cat.Data[0].Path, Mode: "ro_mount"},
		input(t, hello.Inputs, "sample_input_data").Value.Data)
}

// TestConformanceCatalogBatch compiles the batch-endpoint pipeline that uses
// a registered component and two registered models. Its input_data is given
// when the endpoint is invoked, so here with --set.
func TestConformanceCatalogBatch(t *testing.T) {
	if _, err := os.Stat(examplesDir); err != nil {
		t.Skipf("azureml-examples not found at %s", examplesDir)
	}
	cat := examplesCatalog(t)
	dir := filepath.Join(examplesDir, "cli/endpoints/batch/deploy-pipelines/batch-scoring-with-preprocessing")
	for _, name := range []string{"pipeline.yml", "pipeline-job.yml"} {
		file := filepath.Join(dir, name)
		_, diags := Compile(file, Options{})
		require.True(t, diags.HasErrors(), name)
		assert.Contains(t, diags.Error(), `component "uci_heart_prepare" is not registered`, name)

		set := map[string]string{"inputs.input_data": dir}
		p, diags := Compile(file, Options{Catalog: cat, Set: set})
		require.False(t, diags.HasErrors(), "%s:\n%s", name, diags.Error())
		steps := p.Pipeline.Steps
		if len(steps) == 1 && steps[0].Pipeline != nil {
			steps = steps[0].Pipeline.Steps
		}
		prep := step(t, steps, "preprocess_job")
		assert.Equal(t, filepath.Join(mustAbs(t, dir), "components", "prepare", "src"), prep.Command.Code, name)
		assert.Equal(t, &plan.Data{Type: "custom_model", Path: "/models/heart-classifier-transforms"},
			input(t, prep.Inputs, "transformations").Value.Data, name)
		score := step(t, steps, "score_job")
		assert.Equal(t, &plan.Data{Type: "mlflow_model", Path: "/models/heart-classifier"},
			input(t, score.Inputs, "model").Value.Data, name)
	}
}

func mustAbs(t *testing.T, path string) string {
	t.Helper()
	a, err := filepath.Abs(path)
	require.NoError(t, err)
	return a
}
