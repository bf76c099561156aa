package compiler

import (
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/porch-pipelines/porch/compiler/plan"
)

// compileOK compiles a testdata/TestPlan file and fails on any error.
func compileOK(t *testing.T, name string, opts Options) *plan.Plan {
	t.Helper()
	p, diags := Compile(filepath.Join("testdata", "TestPlan", name), opts)
	require.False(t, diags.HasErrors(), "%s", diags.Error())
	require.NotNil(t, p)
	return p
}

func abs(t *testing.T, parts ...string) string {
	t.Helper()
	a, err := filepath.Abs(filepath.Join(append([]string{"testdata", "TestPlan"}, parts...)...))
	require.NoError(t, err)
	return a
}

func stepNames(steps []plan.Step) []string {
	var out []string
	for _, s := range steps {
		out = append(out, s.Name)
	}
	return out
}

func step(t *testing.T, steps []plan.Step, name string) plan.Step {
	t.Helper()
	for _, s := range steps {
		if s.Name == name {
			return s
		}
	}
	t.Fatalf("no step %q", name)
	return plan.Step{}
}

func input(t *testing.T, ins []plan.Input, name string) plan.Input {
	t.Helper()
	for _, in := range ins {
		if in.Name == name {
			return in
		}
	}
	t.Fatalf("no input %q", name)
	return plan.Input{}
}

func TestPlanIO(t *testing.T) {
	p := compileOK(t, "io.yml", Options{})
	assert.Equal(t, plan.Version, p.Version)
	assert.Equal(t, "hello-io-pipeline", p.Name)
	assert.Equal(t, "exp", p.ExperimentName)
	assert.Equal(t, map[string]string{"team": "ml"}, p.Tags)
	assert.Equal(t, plan.Settings{DefaultCompute: "cpu-cluster", DefaultDatastore: "mystore", ContinueOnStepFailure: true}, p.Settings)

	root := p.Pipeline
	assert.Equal(t, plan.Value{Kind: plan.ValueLiteral, Literal: "1e-3"}, input(t, root.Inputs, "lr").Value)
	assert.Equal(t, "number", input(t, root.Inputs, "lr").Type)
	assert.Equal(t, plan.Value{Kind: plan.ValueLiteral, Literal: "False"}, input(t, root.Inputs, "flag").Value)
	assert.Equal(t, "boolean", input(t, root.Inputs, "flag").Type)
	assert.Equal(t, plan.Value{Kind: plan.ValueLiteral, Literal: "3"}, input(t, root.Inputs, "epochs").Value)
	assert.Equal(t, &plan.Data{Type: "uri_folder", Path: abs(t, "data")}, input(t, root.Inputs, "local_data").Value.Data)
	assert.Equal(t, "azureml://datastores/workspaceblobstore/paths/iris.csv", input(t, root.Inputs, "blob").Value.Data.Path)

	// consume is declared first but needs prepare: topological order, ties
	// by declaration order.
	assert.Equal(t, []string{"prepare", "consume", "independent"}, stepNames(root.Steps))
	consume := step(t, root.Steps, "consume")
	assert.Equal(t, []string{"prepare"}, consume.DependsOn)
	assert.Equal(t, "", consume.Compute, "a step's local is the default queue, not settings.default_compute")
	assert.Equal(t, "cpu-cluster", step(t, root.Steps, "prepare").Compute, "no compute: settings.default_compute")
	assert.Equal(t, plan.Value{Kind: plan.ValueStepOutput, Step: "prepare", Output: "out"}, input(t, consume.Inputs, "prepared").Value)
	assert.Equal(t, plan.Value{Kind: plan.ValueStepOutput, Step: "prepare", Output: plan.ArtifactsOutput}, input(t, consume.Inputs, "logs").Value)
	assert.Equal(t, plan.Value{Kind: plan.ValueParentInput, Input: "lr"}, input(t, consume.Inputs, "lr").Value)
	assert.Equal(t, "number", input(t, consume.Inputs, "lr").Type)
	assert.Equal(t, []plan.Part{
		{Text: "cat "}, {Ref: &plan.Ref{Kind: plan.RefInput, Name: "prepared"}}, {Text: "/x "},
		{Ref: &plan.Ref{Kind: plan.RefInput, Name: "logs"}}, {Text: " "},
		{Optional: []plan.Part{{Text: "--lr "}, {Ref: &plan.Ref{Kind: plan.RefInput, Name: "lr"}}}},
		{Text: " "}, {Ref: &plan.Ref{Kind: plan.RefName}},
	}, consume.Command.Template.Parts)

	prep := step(t, root.Steps, "prepare")
	assert.Empty(t, prep.DependsOn)
	assert.Equal(t, plan.Value{Kind: plan.ValueLiteral, Literal: "0.50"}, input(t, prep.Inputs, "literal").Value)
	assert.Equal(t, "number", input(t, prep.Inputs, "literal").Type)
	assert.Equal(t, []plan.Output{{Name: "out", Type: "uri_folder", Mode: "rw_mount",
		Path: "azureml://datastores/${{default_datastore}}/paths/${{name}}/out/", Pos: prep.Outputs[0].Pos}}, prep.Outputs)
	cmd := prep.Command
	assert.Equal(t, abs(t, "components", "src"), cmd.Code)
	assert.Equal(t, "image python:3.11, conda_file ./env.yml", cmd.Environment)
	assert.Equal(t, map[string]string{"A": "1"}, cmd.EnvironmentVariables)
	assert.Equal(t, 60, cmd.TimeoutSeconds)
	assert.Equal(t, plan.Resources{InstanceCount: 2, ShmSize: "2g"}, cmd.Resources)
	assert.Equal(t, &plan.Distribution{Type: "pytorch", ProcessCountPerInstance: 4}, cmd.Distribution)
	assert.Equal(t, "gpu", step(t, root.Steps, "independent").Compute)
	assert.Equal(t, "uri_file", input(t, step(t, root.Steps, "independent").Inputs, "f").Type)
}

func TestPlanNestedTwice(t *testing.T) {
	p := compileOK(t, "nested.yml", Options{})
	assert.Equal(t, "nested_twice", p.Name)
	root := p.Pipeline
	assert.Equal(t, []string{"first", "second", "pick", "reuse"}, stepNames(root.Steps))
	first, second := step(t, root.Steps, "first"), step(t, root.Steps, "second")
	require.NotNil(t, first.Pipeline)
	require.NotNil(t, second.Pipeline)
	assert.NotSame(t, first.Pipeline, second.Pipeline)
	assert.Equal(t, []string{"first"}, second.DependsOn)

	// Nested inputs are declarations; the step binds every one of them.
	assert.Equal(t, []string{"data", "lr", "node"}, []string{first.Inputs[0].Name, first.Inputs[1].Name, first.Inputs[2].Name})
	assert.Equal(t, plan.Value{Kind: plan.ValueLiteral, Literal: "0.1"}, input(t, first.Inputs, "lr").Value, "default")
	assert.Equal(t, plan.Value{Kind: plan.ValueLiteral, Literal: "0.5"}, input(t, second.Inputs, "lr").Value)
	assert.Equal(t, plan.Value{Kind: plan.ValueNone}, input(t, first.Pipeline.Inputs, "data").Value)

	// compute: ${{parent.inputs.node}} resolves per use at compile time.
	assert.Equal(t, "big", step(t, first.Pipeline.Steps, "train").Compute)
	assert.Equal(t, "small", step(t, second.Pipeline.Steps, "train").Compute)
	assert.Equal(t, "first/train", step(t, first.Pipeline.Steps, "train").Path)
	assert.Equal(t, "second/check", step(t, second.Pipeline.Steps, "check").Path)

	train := step(t, first.Pipeline.Steps, "train")
	assert.Equal(t, plan.Value{Kind: plan.ValueParentInput, Input: "data"}, input(t, train.Inputs, "data").Value)
	assert.Equal(t, plan.Value{Kind: plan.ValueNone}, input(t, train.Inputs, "seed").Value)
	assert.Equal(t, "trained", train.Outputs[0].Parent)
	assert.Equal(t, "uri_folder", train.Outputs[0].Type, "a bound output takes the pipeline output's type")
	assert.Equal(t, []plan.Output{{Name: "trained", Type: "uri_folder", Step: "train", StepOutput: "model", Pos: first.Pipeline.Outputs[0].Pos}},
		first.Pipeline.Outputs)
	check := step(t, first.Pipeline.Steps, "check")
	assert.Equal(t, plan.Value{Kind: plan.ValueParentInput, Input: "data"}, input(t, check.Inputs, "d").Value,
		"parent.jobs.train.inputs.data resolves to what train's data is bound to")
	assert.Equal(t, "azureml:AzureML-sklearn-1.5@latest", train.Command.Environment)
	assert.Equal(t, &plan.Environment{Image: "mcr.microsoft.com/azureml/curated/sklearn-1.5:latest", Ref: "azureml:AzureML-sklearn-1.5@latest"},
		train.Command.Env, "a curated environment runs in its public image")
	assert.Equal(t, abs(t, "components", "src"), train.Command.Code)

	pick := step(t, root.Steps, "pick")
	assert.Equal(t, "Train", pick.DisplayName)
	assert.Equal(t, plan.Value{Kind: plan.ValueLiteral, Literal: "7"}, input(t, pick.Inputs, "seed").Value)
	assert.Equal(t, plan.Output{Name: "model", Type: "mlflow_model", Mode: "upload", Parent: "best", Pos: pick.Outputs[0].Pos}, pick.Outputs[0])
	assert.Equal(t, "pick", root.Outputs[0].Step)
	assert.Equal(t, "model", root.Outputs[0].StepOutput)
	reuse := step(t, root.Steps, "reuse")
	assert.Equal(t, []string{"second"}, reuse.DependsOn, "the step input reference carries its producer")
	assert.Equal(t, plan.Value{Kind: plan.ValueStepOutput, Step: "second", Output: "trained"}, input(t, reuse.Inputs, "x").Value)
	assert.Equal(t, abs(t, "data"), input(t, root.Inputs, "data").Value.Data.Path)
}

func TestPlanComponentRoot(t *testing.T) {
	p := compileOK(t, "component_root.yml", Options{})
	assert.Equal(t, "root_component", p.Name)
	assert.Equal(t, plan.Value{Kind: plan.ValueLiteral, Literal: "hello"}, input(t, p.Pipeline.Inputs, "greeting").Value)
	p = compileOK(t, "component_root.yml", Options{Set: map[string]string{"inputs.count": "5", "inputs.greeting": "hi there"}})
	assert.Equal(t, plan.Value{Kind: plan.ValueLiteral, Literal: "5"}, input(t, p.Pipeline.Inputs, "count").Value)
	assert.Equal(t, plan.Value{Kind: plan.ValueLiteral, Literal: "hi there"}, input(t, p.Pipeline.Inputs, "greeting").Value)
}

func TestPlanSetErrors(t *testing.T) {
	for set, want := range map[string]string{
		"inputs.count=0":    `pipeline input "count": value "0" is below the minimum 1`,
		"inputs.count=x":    `pipeline input "count": value "x" is not an integer`,
		"inputs.cuont=1":    `the pipeline has no input "cuont"`,
		"settings.x=1":      `"settings.x" is not a key porch can set`,
		"inputs.greeting=a": "",
	} {
		k, v, _ := cut(set)
		_, diags := Compile(filepath.Join("testdata", "TestPlan", "component_root.yml"), Options{Set: map[string]string{k: v}})
		if want == "" {
			assert.False(t, diags.HasErrors(), diags.Error())
			continue
		}
		require.Len(t, diags, 1, set)
		assert.Equal(t, want, diags[0].Summary)
		assert.NotEmpty(t, diags[0].Detail)
	}
}

func cut(s string) (string, string, bool) {
	for i := range s {
		if s[i] == '=' {
			return s[:i], s[i+1:], true
		}
	}
	return s, "", false
}

func TestPlanBatch(t *testing.T) {
	p := compileOK(t, "batch.yml", Options{})
	assert.Equal(t, "batch-job", p.Name)
	assert.Equal(t, "batch-cluster", p.Settings.DefaultCompute)
	assert.Equal(t, &plan.Data{Type: "uri_folder", Path: abs(t, "data")}, input(t, p.Pipeline.Inputs, "input_data").Value.Data)
	assert.Equal(t, plan.Value{Kind: plan.ValueLiteral, Literal: "append"}, input(t, p.Pipeline.Inputs, "score_mode").Value)
	require.Len(t, p.Pipeline.Outputs, 1)
	assert.Equal(t, "upload", p.Pipeline.Outputs[0].Mode)
	assert.Equal(t, "score", p.Pipeline.Outputs[0].Step)
	score := step(t, p.Pipeline.Steps, "score")
	assert.Equal(t, "batch-cluster", score.Compute)
	assert.Equal(t, abs(t, "components", "src"), score.Command.Code)
	assert.Equal(t, "image python:3.11", score.Command.Environment)
}

func TestPlanName(t *testing.T) {
	assert.Equal(t, "my_pipeline-1", planName("My_Pipeline 1", "", "x.yml"))
	assert.Equal(t, "hello-world", planName("", "Hello, World!", "x.yml"))
	assert.Equal(t, "hello-pipeline-io", planName("", "", "a/b/hello-pipeline-io.yml"))
	assert.Equal(t, "pipeline", planName("", "???", "x.yml"))
	long := planName("a-very-long-name-that-goes-on-and-on-and-on-for-ever", "", "")
	assert.LessOrEqual(t, len(long), 40)
	assert.Equal(t, "a-very-long-name-that-goes-on-and-on-and", long)
}

func TestNormalizeCompute(t *testing.T) {
	for in, want := range map[string]string{"azureml:cpu-cluster": "cpu-cluster", "cpu-cluster": "cpu-cluster",
		"serverless": "", "azureml:serverless": "", "local": "", "": ""} {
		assert.Equal(t, want, normalizeCompute(in), in)
	}
}

func TestPlanSetUntyped(t *testing.T) {
	p := compileOK(t, "io.yml", Options{Set: map[string]string{"inputs.lr": "fast", "inputs.local_data": "/tmp/d"}})
	assert.Equal(t, plan.Input{Name: "lr", Type: "string", Value: plan.Value{Kind: plan.ValueLiteral, Literal: "fast"},
		Pos: input(t, p.Pipeline.Inputs, "lr").Pos}, input(t, p.Pipeline.Inputs, "lr"))
	assert.Equal(t, &plan.Data{Type: "uri_folder", Path: "/tmp/d"}, input(t, p.Pipeline.Inputs, "local_data").Value.Data)

	// An untyped literal's --set value is checked against the inputs it binds.
	_, diags := Compile(filepath.Join("testdata", "TestPlan", "nested.yml"), Options{Set: map[string]string{"inputs.node": "x"}})
	assert.False(t, diags.HasErrors(), diags.Error())
	p = compileOK(t, "nested.yml", Options{Set: map[string]string{"inputs.node": "azureml:other"}})
	assert.Equal(t, "other", step(t, step(t, p.Pipeline.Steps, "first").Pipeline.Steps, "train").Compute)
}

func TestSetCheckedAgainstConsumers(t *testing.T) {
	read := memFS(map[string][]byte{
		"p.yml": []byte("type: pipeline\ninputs:\n  n: 3\njobs:\n  t:\n    component: ./c.yml\n    inputs:\n      count: ${{parent.inputs.n}}\n"),
		"c.yml": []byte("type: command\ninputs:\n  count:\n    type: integer\ncommand: echo ${{inputs.count}}\nenvironment: {image: python}\n"),
	})
	_, diags := Compile("p.yml", Options{ReadFile: read, Set: map[string]string{"inputs.n": "abc"}})
	require.Len(t, diags, 1, diags.Error())
	assert.Equal(t, `input "count" of step "t": pipeline input "n" value "abc" is not an integer`, diags[0].Summary)
	assert.Equal(t, plan.Pos{File: "p.yml", Line: 8, Col: 14}, diags[0].Pos)
	p, diags := Compile("p.yml", Options{ReadFile: read, Set: map[string]string{"inputs.n": "7"}})
	require.False(t, diags.HasErrors(), diags.Error())
	assert.Equal(t, plan.Input{Name: "n", Type: "integer", Value: plan.Value{Kind: plan.ValueLiteral, Literal: "7"},
		Pos: plan.Pos{File: "p.yml", Line: 3, Col: 3}}, p.Pipeline.Inputs[0])
}

// TestPlanJSON checks that plans survive the JSON round trip Temporal
// payloads put them through.
func TestPlanJSON(t *testing.T) {
	for _, name := range []string{"io.yml", "nested.yml", "batch.yml", "component_root.yml", "parallel.yml"} {
		p := compileOK(t, name, Options{})
		data, err := json.Marshal(p)
		require.NoError(t, err)
		var back plan.Plan
		require.NoError(t, json.Unmarshal(data, &back))
		assert.Equal(t, p, &back, name)
	}
}

// TestSetReplacesUnreadableData checks that a web or Azure storage URI is
// refused, whether written or given with --set, and that --set replacing a
// written one with a local path compiles: the written URI is never read.
func TestStorageURIsCompileEverywhereAPathDoes(t *testing.T) {
	read := memFS(map[string][]byte{
		"p.yml": []byte("type: pipeline\ninputs:\n  web:\n    type: uri_file\n    path: https://example.com/iris.csv\n" +
			"jobs:\n  t:\n    command: cat ${{inputs.f}}\n    inputs:\n      f: ${{parent.inputs.web}}\n"),
	})
	p, diags := Compile("p.yml", Options{ReadFile: read})
	require.False(t, diags.HasErrors(), diags.Error())
	assert.Equal(t, "https://example.com/iris.csv", p.Pipeline.Inputs[0].Value.Data.Path)

	p, diags = Compile("p.yml", Options{ReadFile: read, Set: map[string]string{"inputs.web": "wasbs://c@acct.blob.core.windows.net/iris.csv"}})
	require.False(t, diags.HasErrors(), diags.Error())
	assert.Equal(t, "wasbs://c@acct.blob.core.windows.net/iris.csv", p.Pipeline.Inputs[0].Value.Data.Path)

	_, diags = Compile("p.yml", Options{ReadFile: read, Set: map[string]string{"inputs.web": "wasbs://acct.blob.core.windows.net/c/iris.csv"}})
	require.Len(t, diags, 1, diags.Error())
	assert.Equal(t, `--set inputs.web: data "wasbs://acct.blob.core.windows.net/c/iris.csv" is not a wasbs:// URI: expected wasbs://CONTAINER@ACCOUNT.blob.core.windows.net/PATH`, diags[0].Summary)

	_, diags = Compile("p.yml", Options{ReadFile: read, Set: map[string]string{"inputs.web": "gs://bucket/iris.csv"}})
	require.Len(t, diags, 1, diags.Error())
	assert.Equal(t, `--set inputs.web: data "gs://bucket/iris.csv": porch cannot read gs:// URIs`, diags[0].Summary)
	assert.Contains(t, diags[0].Detail, "porch datastore create")

	p, diags = Compile("p.yml", Options{ReadFile: read, Set: map[string]string{"inputs.web": "/tmp/iris.csv"}})
	require.False(t, diags.HasErrors(), diags.Error())
	assert.Equal(t, "/tmp/iris.csv", p.Pipeline.Inputs[0].Value.Data.Path)
}
