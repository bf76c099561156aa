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

// envPipeline writes a one-step pipeline whose step has the given
// environment: (YAML indented under the key) and compiles it.
func envPipeline(t *testing.T, env string, cat *plan.Catalog) (*plan.Plan, Diagnostics, string) {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "conda.yml"), []byte("dependencies:\n  - pip:\n      - pyjokes\n"), 0o644))
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "ctx"), 0o755))
	src := "type: pipeline\njobs:\n  s:\n    command: echo hi\n    environment: " + env + "\n"
	file := filepath.Join(dir, "p.yml")
	require.NoError(t, os.WriteFile(file, []byte(src), 0o644))
	p, diags := Compile(file, Options{Catalog: cat})
	return p, diags, dir
}

// TestEnvironmentForms compiles every form of environment: Azure ML
// knows into the environment the step runs in.
func TestEnvironmentForms(t *testing.T) {
	cat := &plan.Catalog{Environments: []plan.EnvironmentAsset{
		{Name: "team", Version: "1", Environment: plan.Environment{Image: "localhost/team:1"}},
		{Name: "team", Version: "2", Environment: plan.Environment{Image: "localhost/team:2", Conda: "dependencies: [pip]\n", CondaFile: "/x/conda.yml"}},
		{Name: "team", Version: "3", Archived: true, Environment: plan.Environment{Image: "localhost/team:3"}},
	}}
	cases := []struct {
		name, env string
		want      func(dir string) *plan.Environment
		describe  string
	}{
		{"image", "{image: 'python:3.11'}", func(string) *plan.Environment { return &plan.Environment{Image: "python:3.11"} }, "image python:3.11"},
		{"image and conda file", "{image: localhost/py, conda_file: ./conda.yml}", func(dir string) *plan.Environment {
			return &plan.Environment{Image: "localhost/py", Conda: "dependencies:\n  - pip:\n      - pyjokes\n", CondaFile: filepath.Join(dir, "conda.yml")}
		}, "image localhost/py with conda file " + "DIR/conda.yml"},
		{"inline conda file", "{image: localhost/py, conda_file: {dependencies: [python=3.11]}}", func(string) *plan.Environment {
			return &plan.Environment{Image: "localhost/py", Conda: "dependencies:\n    - python=3.11\n", CondaFile: "inline"}
		}, "image localhost/py with conda file inline"},
		{"build", "{build: {path: ./ctx, dockerfile_path: docker/Dockerfile.gpu}}", func(dir string) *plan.Environment {
			return &plan.Environment{Build: &plan.EnvironmentBuild{Context: filepath.Join(dir, "ctx"), Dockerfile: "docker/Dockerfile.gpu"}}
		}, "build DIR/ctx (docker/Dockerfile.gpu)"},
		{"build default Dockerfile", "{build: {path: ctx}}", func(dir string) *plan.Environment {
			return &plan.Environment{Build: &plan.EnvironmentBuild{Context: filepath.Join(dir, "ctx"), Dockerfile: "Dockerfile"}}
		}, "build DIR/ctx (Dockerfile)"},
		{"registered version", "azureml:team:1", func(string) *plan.Environment {
			return &plan.Environment{Image: "localhost/team:1", Ref: "azureml:team:1"}
		}, "azureml:team:1 (image localhost/team:1)"},
		{"registered latest skips archived", "azureml:team@latest", func(string) *plan.Environment {
			return &plan.Environment{Image: "localhost/team:2", Conda: "dependencies: [pip]\n", CondaFile: "/x/conda.yml", Ref: "azureml:team@latest"}
		}, "azureml:team@latest (image localhost/team:2 with conda file /x/conda.yml)"},
		{"archived by version", "azureml:team:3", func(string) *plan.Environment {
			return &plan.Environment{Image: "localhost/team:3", Ref: "azureml:team:3"}
		}, "azureml:team:3 (image localhost/team:3)"},
		{"curated", "azureml:AzureML-sklearn-1.0-ubuntu20.04-py38-cpu@latest", func(string) *plan.Environment {
			return &plan.Environment{Image: "mcr.microsoft.com/azureml/curated/sklearn-1.0-ubuntu20.04-py38-cpu:latest",
				Ref: "azureml:AzureML-sklearn-1.0-ubuntu20.04-py38-cpu@latest"}
		}, "azureml:AzureML-sklearn-1.0-ubuntu20.04-py38-cpu@latest (image mcr.microsoft.com/azureml/curated/sklearn-1.0-ubuntu20.04-py38-cpu:latest)"},
		{"curated version", "azureml:AzureML-lightgbm-3.3:12", func(string) *plan.Environment {
			return &plan.Environment{Image: "mcr.microsoft.com/azureml/curated/lightgbm-3.3:12", Ref: "azureml:AzureML-lightgbm-3.3:12"}
		}, "azureml:AzureML-lightgbm-3.3:12 (image mcr.microsoft.com/azureml/curated/lightgbm-3.3:12)"},
		{"registry version", "azureml://registries/azureml/environments/sklearn-1.5/versions/7", func(string) *plan.Environment {
			return &plan.Environment{Image: "mcr.microsoft.com/azureml/curated/sklearn-1.5:7", Ref: "azureml://registries/azureml/environments/sklearn-1.5/versions/7"}
		}, "azureml://registries/azureml/environments/sklearn-1.5/versions/7 (image mcr.microsoft.com/azureml/curated/sklearn-1.5:7)"},
		{"registry latest", "azureml://registries/azureml/environments/sklearn-1.5/labels/latest", func(string) *plan.Environment {
			return &plan.Environment{Image: "mcr.microsoft.com/azureml/curated/sklearn-1.5:latest", Ref: "azureml://registries/azureml/environments/sklearn-1.5/labels/latest"}
		}, "azureml://registries/azureml/environments/sklearn-1.5/labels/latest (image mcr.microsoft.com/azureml/curated/sklearn-1.5:latest)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, diags, dir := envPipeline(t, c.env, cat)
			require.False(t, diags.HasErrors(), "%s", diags.Error())
			cmd := p.Pipeline.Steps[0].Command
			assert.Equal(t, c.want(dir), cmd.Env)
			assert.Equal(t, strings.ReplaceAll(c.describe, "DIR", dir), cmd.Env.Describe())
			assert.NotEmpty(t, cmd.Environment, "the description as written stays")
		})
	}
}

// TestEnvironmentErrors: an environment porch cannot resolve or run is a
// positioned validate error that says what to do.
func TestEnvironmentErrors(t *testing.T) {
	cases := map[string]string{
		"azureml:nope:1":        `p.yml:5:18: error: environment "nope" is not registered`,
		"nope@latest":           `p.yml:5:18: error: environment "nope" is not registered`,
		"azureml:team:9":        `p.yml:5:18: error: environment "team" has no version "9"`,
		"azureml://registries/myreg/environments/x/versions/1": `p.yml:5:18: error: environment "azureml://registries/myreg/environments/x/versions/1" is in registry "myreg", which porch cannot reach`,
		"azureml://registries/azureml/environments/x":          `is no form of registry reference porch knows`,
		"{conda_file: ./conda.yml}":                            `p.yml:5:18: error: environment has no image: or build:`,
		"{image: x, build: {path: ctx}}":                       `p.yml:5:29: error: environment has both image: and build:`,
		"{image: x, conda_file: ./missing.yml}":                `p.yml:5:41: error: conda file "./missing.yml" does not exist`,
		"{build: {path: ctx, dockerfile_path: ../Dockerfile}}": `dockerfile_path "../Dockerfile" is outside the build context`,
		"[a, b]": `p.yml:5:18: error: environment must be a reference or a mapping, found a list`,
	}
	cat := &plan.Catalog{Environments: []plan.EnvironmentAsset{{Name: "team", Version: "1", Environment: plan.Environment{Image: "x"}}}}
	for env, want := range cases {
		_, diags, dir := envPipeline(t, env, cat)
		require.True(t, diags.HasErrors(), env)
		assert.Contains(t, strings.ReplaceAll(diags.Error(), dir+"/", ""), want, env)
	}
}

// TestParseEnvironmentFile reads an environment file as porch
// environment create -f does: its conda file is read now, its build
// context made absolute.
func TestParseEnvironmentFile(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "conda.yml"), []byte("dependencies: [pip]\n"), 0o644))
	file := filepath.Join(dir, "env.yml")
	require.NoError(t, os.WriteFile(file, []byte("$schema: https://azuremlschemas.azureedge.net/latest/environment.schema.json\n"+
		"name: team\nversion: 2\ndescription: the team's\nimage: localhost/py\nconda_file: conda.yml\nos_type: linux\n"), 0o644))
	a, diags := ParseEnvironment(file, Options{})
	require.False(t, diags.HasErrors(), "%s", diags.Error())
	assert.Empty(t, diags)
	assert.Equal(t, plan.EnvironmentAsset{Name: "team", Version: "2", Description: "the team's",
		Environment: plan.Environment{Image: "localhost/py", Conda: "dependencies: [pip]\n", CondaFile: filepath.Join(dir, "conda.yml")}}, a)

	require.NoError(t, os.WriteFile(file, []byte("name: team\nimage: x\nbuild: {path: .}\n"), 0o644))
	_, diags = ParseEnvironment(file, Options{})
	assert.Contains(t, diags.Error(), "environment has both image: and build:")
}
