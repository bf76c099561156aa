package compiler

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/porch-pipelines/porch/compiler/plan"
)

// registeredDir holds the sources of testCatalog's components, as
// `porch component create -f` would have read them.
var registeredDir = filepath.Join("testdata", "TestCatalog", "registered")

// testCatalog registers data assets, models and components in an order
// that makes "latest" differ from the highest version: iris 1, 3, 2
// (latest is 2) and train 2, 1 (latest is 1).
func testCatalog(t *testing.T) *plan.Catalog {
	t.Helper()
	component := func(name, version, file string) plan.ComponentAsset {
		src, err := os.ReadFile(filepath.Join(registeredDir, file))
		require.NoError(t, err)
		return plan.ComponentAsset{Name: name, Version: version, Source: string(src), Dir: registeredDir}
	}
	return &plan.Catalog{
		Data: []plan.Asset{
			{Name: "iris", Version: "1", Type: "uri_folder", Path: "/data/iris/1"},
			{Name: "iris", Version: "3", Type: "uri_folder", Path: "/data/iris/3"},
			{Name: "iris", Version: "2", Type: "uri_folder", Path: "/data/iris/2"},
			{Name: "sales", Version: "2", Type: "mltable", Path: "azureml://datastores/shared/paths/sales/"},
			{Name: "labels", Version: "1", Type: "uri_file", Path: "/data/labels.csv"},
		},
		Models: []plan.Asset{
			{Name: "clf", Version: "1", Type: "custom_model", Path: "/models/clf/1"},
			{Name: "clf", Version: "2", Type: "mlflow_model", Path: "azureml://datastores/shared/paths/clf/2"},
		},
		Components: []plan.ComponentAsset{
			component("train", "2", "train_v2.yml"),
			component("train", "1", "train_v1.yml"),
			component("prep_pipeline", "3", "prep_pipeline.yml"),
			component("broken", "1", "broken_source.yml"),
		},
		Environments: []plan.EnvironmentAsset{
			{Name: "my-env", Version: "3", Environment: plan.Environment{Image: "localhost/my-env:3"}},
		},
	}
}

func TestPlanCatalogData(t *testing.T) {
	p, diags := Compile(filepath.Join("testdata", "TestCatalog", "pipeline.yml"), Options{Catalog: testCatalog(t)})
	require.False(t, diags.HasErrors(), "%s", diags.Error())
	root := p.Pipeline
	data := func(ins []plan.Input, name string) plan.Input {
		in := input(t, ins, name)
		require.Equal(t, plan.ValueData, in.Value.Kind, name)
		return in
	}
	assert.Equal(t, &plan.Data{Type: "uri_folder", Path: "/data/iris/1"}, data(root.Inputs, "pinned").Value.Data)
	// @latest is the version registered last, not the highest.
	assert.Equal(t, &plan.Data{Type: "uri_folder", Path: "/data/iris/2"}, data(root.Inputs, "latest").Value.Data)
	// The declared type wins when it fits: an MLTable is a folder.
	assert.Equal(t, &plan.Data{Type: "uri_folder", Path: "azureml://datastores/shared/paths/sales/"}, data(root.Inputs, "table").Value.Data)
	// An untyped input takes the asset's type; :latest means @latest.
	file := data(root.Inputs, "file")
	assert.Equal(t, "uri_file", file.Type)
	assert.Equal(t, &plan.Data{Type: "uri_file", Path: "/data/labels.csv"}, file.Value.Data)

	// A bare azureml:name:version given to a component's data input.
	pinned := step(t, root.Steps, "train_pinned")
	assert.Equal(t, &plan.Data{Type: "uri_folder", Path: "/data/iris/1"}, data(pinned.Inputs, "data").Value.Data)

	inline := step(t, root.Steps, "inline")
	assert.Equal(t, &plan.Data{Type: "uri_file", Path: "/data/labels.csv"}, data(inline.Inputs, "f").Value.Data)
	assert.Equal(t, "uri_file", input(t, inline.Inputs, "f").Type)
	assert.Equal(t, &plan.Data{Type: "custom_model", Path: "/data/iris/2"}, data(inline.Inputs, "m").Value.Data)
	assert.Equal(t, "azureml:my-env:3", inline.Command.Environment)
}

func TestPlanCatalogComponents(t *testing.T) {
	p, diags := Compile(filepath.Join("testdata", "TestCatalog", "pipeline.yml"), Options{Catalog: testCatalog(t)})
	require.False(t, diags.HasErrors(), "%s", diags.Error())
	dir, err := filepath.Abs(registeredDir)
	require.NoError(t, err)
	root := p.Pipeline

	// train 1 was registered after train 2, so it is the latest.
	latest := step(t, root.Steps, "train_latest")
	assert.Equal(t, filepath.Join(dir, "src_v1"), latest.Command.Code, "code: resolves against the component's Dir")
	assert.Contains(t, latest.Command.Template.Source, "train.py")
	pinned := step(t, root.Steps, "train_pinned")
	assert.Equal(t, filepath.Join(dir, "src_v2"), pinned.Command.Code)
	assert.Contains(t, pinned.Command.Template.Source, "train2.py")

	// A registered pipeline component's steps name files relative to Dir.
	prep := step(t, root.Steps, "prep")
	require.Equal(t, plan.StepPipeline, prep.Type)
	require.NotNil(t, prep.Pipeline)
	clean := step(t, prep.Pipeline.Steps, "clean")
	assert.Equal(t, filepath.Join(dir, "clean_src"), clean.Command.Code)
	assert.Equal(t, plan.Value{Kind: plan.ValueParentInput, Input: "raw"}, input(t, clean.Inputs, "raw").Value)
}

func TestPlanCatalogSet(t *testing.T) {
	opts := Options{Catalog: testCatalog(t), Set: map[string]string{"inputs.latest": "azureml:iris:3", "inputs.file": "azureml:labels@latest"}}
	p, diags := Compile(filepath.Join("testdata", "TestCatalog", "pipeline.yml"), opts)
	require.False(t, diags.HasErrors(), "%s", diags.Error())
	assert.Equal(t, &plan.Data{Type: "uri_folder", Path: "/data/iris/3"}, input(t, p.Pipeline.Inputs, "latest").Value.Data)
	assert.Equal(t, &plan.Data{Type: "uri_file", Path: "/data/labels.csv"}, input(t, p.Pipeline.Inputs, "file").Value.Data)

	for set, want := range map[string]string{
		"azureml:iris:9":    `--set inputs.pinned: data asset "iris" has no version "9"`,
		"azureml:labels:1":  `--set inputs.pinned: data asset "labels" version "1" is uri_file, but the input is uri_folder`,
		"azureml:iris@prod": `--set inputs.pinned: data reference "azureml:iris@prod" has label "prod", which porch does not know`,
		"azureml://registries/r/data/iris/versions/1": `--set inputs.pinned: data "azureml://registries/r/data/iris/versions/1" is a registry reference that porch cannot resolve`,
	} {
		opts.Set = map[string]string{"inputs.pinned": set}
		p, diags := Compile(filepath.Join("testdata", "TestCatalog", "pipeline.yml"), opts)
		assert.Nil(t, p, set)
		require.Len(t, diags, 1, set)
		assert.Equal(t, want, diags[0].Summary)
		assert.Equal(t, filepath.Join("testdata", "TestCatalog", "pipeline.yml"), diags[0].Pos.File)
	}
}

// TestCatalogDiagnostics compiles every testdata/TestCatalogDiagnostics/*.yml
// against testCatalog and compares the diagnostics with <case>.golden.
func TestCatalogDiagnostics(t *testing.T) {
	cases, err := filepath.Glob(filepath.Join("testdata", "TestCatalogDiagnostics", "*.yml"))
	require.NoError(t, err)
	require.NotEmpty(t, cases)
	for _, file := range cases {
		name := strings.TrimSuffix(filepath.Base(file), ".yml")
		t.Run(name, func(t *testing.T) {
			cat := testCatalog(t)
			if strings.HasPrefix(name, "empty_") {
				cat = nil
			}
			p, diags := Compile(file, Options{Catalog: cat})
			assert.Nil(t, p, "a plan despite errors")
			require.True(t, diags.HasErrors())
			assertGolden(t, file, diags, "TestCatalogDiagnostics")
		})
	}
}

// TestGarbledCatalog compiles garbled versions of the catalogue test
// pipeline and of a registered component's source: never a panic, every
// diagnostic names a file.
func TestGarbledCatalog(t *testing.T) {
	file := filepath.Join("testdata", "TestCatalog", "pipeline.yml")
	data, err := os.ReadFile(file)
	require.NoError(t, err)
	compile := func(what string, variant []byte, cat *plan.Catalog) {
		defer func() {
			if r := recover(); r != nil {
				t.Fatalf("panic on a garbled %s: %v\n--- input ---\n%s", what, r, variant)
			}
		}()
		read := func(name string) ([]byte, error) {
			if name == file {
				return variant, nil
			}
			return os.ReadFile(name)
		}
		_, diags := Compile(file, Options{ReadFile: read, Catalog: cat})
		for _, d := range diags {
			require.NotEmpty(t, d.Pos.File, "garbled %s: %s", what, d.Summary)
		}
	}
	for _, v := range garble(data) {
		compile("pipeline", v, testCatalog(t))
	}
	for _, v := range garble([]byte(testCatalog(t).Components[0].Source)) {
		cat := testCatalog(t)
		cat.Components[0].Source = string(v)
		compile("registered component", data, cat)
	}
}

// TestPlanCatalogModels resolves registered models, pinned and @latest, in
// model inputs and an untyped one, and with --set.
func TestPlanCatalogModels(t *testing.T) {
	read := memFS(map[string][]byte{"p.yml": []byte(`type: pipeline
inputs:
  pinned: {type: custom_model, path: "azureml:clf:1"}
  latest: {type: mlflow_model, path: "azureml:clf@latest"}
  untyped: {path: "azureml:clf:1"}
jobs:
  score:
    command: ls ${{inputs.m}} ${{inputs.n}} ${{inputs.u}}
    inputs:
      m: ${{parent.inputs.pinned}}
      u: ${{parent.inputs.untyped}}
      n:
        type: mlflow_model
        path: azureml:clf@latest
`)})
	opts := Options{ReadFile: read, Catalog: testCatalog(t)}
	p, diags := Compile("p.yml", opts)
	require.False(t, diags.HasErrors(), "%s", diags.Error())
	ins := p.Pipeline.Inputs
	assert.Equal(t, &plan.Data{Type: "custom_model", Path: "/models/clf/1"}, input(t, ins, "pinned").Value.Data)
	assert.Equal(t, &plan.Data{Type: "mlflow_model", Path: "azureml://datastores/shared/paths/clf/2"}, input(t, ins, "latest").Value.Data)
	assert.Equal(t, "custom_model", input(t, ins, "untyped").Type, "an untyped input takes the model's type")
	assert.Equal(t, &plan.Data{Type: "custom_model", Path: "/models/clf/1"}, input(t, ins, "untyped").Value.Data)
	n := input(t, step(t, p.Pipeline.Steps, "score").Inputs, "n")
	assert.Equal(t, &plan.Data{Type: "mlflow_model", Path: "azureml://datastores/shared/paths/clf/2"}, n.Value.Data)

	opts.Set = map[string]string{"inputs.latest": "azureml:clf:2"}
	p, diags = Compile("p.yml", opts)
	require.False(t, diags.HasErrors(), "%s", diags.Error())
	assert.Equal(t, "azureml://datastores/shared/paths/clf/2", input(t, p.Pipeline.Inputs, "latest").Value.Data.Path)
	for set, want := range map[string]string{
		"azureml:clf:2":      `--set inputs.pinned: model "clf" version "2" is mlflow_model, but the input is custom_model`,
		"azureml:clf:9":      `--set inputs.pinned: model "clf" has no version "9"`,
		"azureml:knn@latest": `--set inputs.pinned: model "knn" is not registered`,
	} {
		opts.Set = map[string]string{"inputs.pinned": set}
		_, diags := Compile("p.yml", opts)
		require.Len(t, diags, 1, set)
		assert.Equal(t, want, diags[0].Summary)
		if !strings.Contains(want, "but the input is") {
			assert.Contains(t, diags[0].Detail, "porch model create")
		}
	}
}
