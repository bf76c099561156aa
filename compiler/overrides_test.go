package compiler

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/porch-pipelines/porch/compiler/plan"
)

const setPipeline = `type: pipeline
display_name: old
inputs:
  input_data:
    type: uri_folder
    path: /data/in
  raw: /data/raw
  lit: 3
outputs:
  final:
    type: uri_folder
settings:
  default_compute: azureml:cpu
jobs:
  train:
    command: echo ${{inputs.d}} ${{inputs.n}} ${{inputs.r}}
    inputs:
      d: ${{parent.inputs.input_data}}
      n: 1
      r: ${{parent.inputs.raw}}
    outputs:
      o: ${{parent.outputs.final}}
  score:
    command: echo ${{inputs.d}}
    inputs:
      d:
        type: uri_file
        path: /data/one.csv
`

func compileSets(t *testing.T, set map[string]string) (*plan.Plan, Diagnostics) {
	t.Helper()
	read := memFS(map[string][]byte{"p.yml": []byte(setPipeline)})
	return Compile("p.yml", Options{ReadFile: read, Set: set})
}

// TestSetForms applies every --set form az ml job create takes and finds
// each in the plan.
func TestSetForms(t *testing.T) {
	p, diags := compileSets(t, map[string]string{
		"inputs.input_data.path":            "/data/other",
		"inputs.input_data.mode":            "download",
		"inputs.raw.type":                   "uri_file",
		"inputs.lit":                        "5",
		"outputs.final.mode":                "upload",
		"settings.force_rerun":              "True",
		"settings.continue_on_step_failure": "true",
		"settings.default_compute":          "azureml:gpu",
		"settings.default_datastore":        "mystore",
		"jobs.train.compute":                "azureml:big",
		"jobs.train.inputs.n":               "7",
		"jobs.score.inputs.d.path":          "/data/two.csv",
		"jobs.score.inputs.d.mode":          "download",
		"name":                              "renamed",
		"display_name":                      "new name",
		"experiment_name":                   "exp",
		"description":                       "a description",
		"tags.owner":                        "me",
		"tags.team.sub":                     "dotted",
	})
	require.False(t, diags.HasErrors(), diags.Error())
	assert.Equal(t, plan.Settings{DefaultCompute: "gpu", DefaultDatastore: "mystore", ContinueOnStepFailure: true, ForceRerun: true}, p.Settings)
	assert.Equal(t, "renamed", p.Name)
	assert.Equal(t, "new name", p.DisplayName)
	assert.Equal(t, "exp", p.ExperimentName)
	assert.Equal(t, "a description", p.Description)
	assert.Equal(t, map[string]string{"owner": "me", "team.sub": "dotted"}, p.Tags)

	root := p.Pipeline
	assert.Equal(t, &plan.Data{Type: "uri_folder", Path: "/data/other", Mode: "download"}, input(t, root.Inputs, "input_data").Value.Data)
	assert.Equal(t, &plan.Data{Type: "uri_file", Path: "/data/raw"}, input(t, root.Inputs, "raw").Value.Data)
	assert.Equal(t, plan.Value{Kind: plan.ValueLiteral, Literal: "5"}, input(t, root.Inputs, "lit").Value)
	assert.Equal(t, "upload", root.Outputs[0].Mode)
	train := step(t, root.Steps, "train")
	assert.Equal(t, "big", train.Compute)
	assert.Equal(t, plan.Value{Kind: plan.ValueLiteral, Literal: "7"}, input(t, train.Inputs, "n").Value)
	score := step(t, root.Steps, "score")
	assert.Equal(t, "gpu", score.Compute, "a step without compute: takes the overridden default")
	assert.Equal(t, &plan.Data{Type: "uri_file", Path: "/data/two.csv", Mode: "download"}, input(t, score.Inputs, "d").Value.Data)
}

// TestSetForceRerunFalse: az's Python-style False turns a written true off.
func TestSetForceRerunFalse(t *testing.T) {
	read := memFS(map[string][]byte{"p.yml": []byte("type: pipeline\nsettings:\n  force_rerun: true\njobs:\n  a:\n    command: echo\n")})
	p, diags := Compile("p.yml", Options{ReadFile: read})
	require.False(t, diags.HasErrors(), diags.Error())
	assert.True(t, p.Settings.ForceRerun)
	p, diags = Compile("p.yml", Options{ReadFile: read, Set: map[string]string{"settings.force_rerun": "False"}})
	require.False(t, diags.HasErrors(), diags.Error())
	assert.False(t, p.Settings.ForceRerun)
}

// TestSetRelativePath: a relative path on the command line is relative to
// the working folder, as --set inputs.NAME=PATH is.
func TestSetRelativePath(t *testing.T) {
	p, diags := compileSets(t, map[string]string{"inputs.input_data.path": "local/data", "inputs.raw.path": "local/raw"})
	require.False(t, diags.HasErrors(), diags.Error())
	want, err := filepath.Abs("local/data")
	require.NoError(t, err)
	assert.Equal(t, want, input(t, p.Pipeline.Inputs, "input_data").Value.Data.Path)
	want, err = filepath.Abs("local/raw")
	require.NoError(t, err)
	assert.Equal(t, want, input(t, p.Pipeline.Inputs, "raw").Value.Data.Path)
}

// TestSetErrors: a problem with an override is reported at the flag, by
// the same checks as the YAML's.
func TestSetErrors(t *testing.T) {
	for set, want := range map[string]string{
		"settings.priority=1":              `"settings.priority" is not a key porch can set`,
		"jobs.train.command=echo":          `"jobs.train.command" is not a key porch can set`,
		"inputs..path=x":                   `"inputs..path" is not a key porch can set`,
		"inputs.nope.path=/x":              `the pipeline has no input "nope"`,
		"outputs.nope.mode=upload":         `the pipeline has no output "nope"`,
		"jobs.trian.compute=big":           `the pipeline has no step "trian"`,
		"settings.force_rerun=maybe":       `"force_rerun" must be a boolean, found "maybe"`,
		"inputs.input_data.mode=sideways":  `input "input_data" has mode "sideways", which is no input mode`,
		"jobs.train.outputs.o.mode=upload": `"o" is the scalar "${{parent.outputs.final}}" in the file, not a mapping`,
	} {
		k, v, _ := cut(set)
		_, diags := compileSets(t, map[string]string{k: v})
		require.Len(t, diags, 1, "%s: %s", set, diags.Error())
		assert.Equal(t, want, diags[0].Summary, set)
		assert.Equal(t, plan.Pos{File: "--set " + k}, diags[0].Pos, set)
		assert.NotEmpty(t, diags[0].Detail, set)
	}
	_, diags := compileSets(t, map[string]string{"inputs.raw": "/x", "inputs.raw.mode": "download"})
	require.Len(t, diags, 1, diags.Error())
	assert.Equal(t, `--set inputs.raw also sets input "raw"`, diags[0].Summary)
	assert.Equal(t, plan.Pos{File: "--set inputs.raw.mode"}, diags[0].Pos)
	_, diags = compileSets(t, map[string]string{"settings.priority": "1"})
	assert.Contains(t, diags[0].Detail, "porch accepts --set "+SetForms)
	_, diags = compileSets(t, map[string]string{"jobs.trian.compute": "big"})
	assert.Contains(t, diags[0].Detail, `"train"`)
	var b strings.Builder
	diags.Format(&b)
	assert.Equal(t, "--set jobs.trian.compute: error: the pipeline has no step \"trian\"\n", strings.SplitAfter(b.String(), "\n")[0])
}

// TestSetOddKeys: any key is refused with a message, never a panic.
func TestSetOddKeys(t *testing.T) {
	for _, k := range []string{"", ".", "inputs", "outputs", "jobs", "settings", "tags", "tags.", "jobs.train",
		"jobs.train.inputs", "jobs.train.outputs.o", "inputs.raw.path.path", "outputs.final", "a.b.c"} {
		_, diags := compileSets(t, map[string]string{k: "x"})
		require.True(t, diags.HasErrors(), "%q", k)
		assert.Equal(t, plan.Pos{File: "--set " + k}, diags[0].Pos, "%q", k)
	}
}

// TestSetDottedNames: input names may hold dots, as Azure ML allows.
func TestSetDottedNames(t *testing.T) {
	read := memFS(map[string][]byte{"p.yml": []byte(`type: pipeline
inputs:
  data.train:
    type: uri_folder
    path: /a
  lr.max: 1
jobs:
  a:
    command: echo
    inputs:
      n.x: 1
`)})
	p, diags := Compile("p.yml", Options{ReadFile: read, Set: map[string]string{
		"inputs.data.train.path": "/b", "inputs.lr.max": "2", "jobs.a.inputs.n.x": "3"}})
	require.False(t, diags.HasErrors(), diags.Error())
	assert.Equal(t, "/b", input(t, p.Pipeline.Inputs, "data.train").Value.Data.Path)
	assert.Equal(t, "2", input(t, p.Pipeline.Inputs, "lr.max").Value.Literal)
	assert.Equal(t, "3", input(t, step(t, p.Pipeline.Steps, "a").Inputs, "n.x").Value.Literal)
}

// TestSetKeepsAnchors: overriding a step's input never changes another
// step that shares the mapping through an anchor.
func TestSetKeepsAnchors(t *testing.T) {
	read := memFS(map[string][]byte{"p.yml": []byte(`type: pipeline
jobs:
  a:
    command: echo ${{inputs.n}}
    inputs: &common
      n: 1
  b:
    command: echo ${{inputs.n}}
    inputs: *common
`)})
	p, diags := Compile("p.yml", Options{ReadFile: read, Set: map[string]string{"jobs.a.inputs.n": "2"}})
	require.False(t, diags.HasErrors(), diags.Error())
	assert.Equal(t, "2", input(t, step(t, p.Pipeline.Steps, "a").Inputs, "n").Value.Literal)
	assert.Equal(t, "1", input(t, step(t, p.Pipeline.Steps, "b").Inputs, "n").Value.Literal)
}
