package compiler

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/porch-pipelines/porch/compiler/plan"
)

func TestPlanSweepCommandTrial(t *testing.T) {
	p := compileOK(t, "sweep.yml", Options{})
	require.Equal(t, []string{"tune", "inline", "nested", "use"}, stepNames(p.Pipeline.Steps))
	s := step(t, p.Pipeline.Steps, "tune")
	assert.Equal(t, plan.StepSweep, s.Type)
	assert.Equal(t, "cpu-cluster", s.Compute)
	assert.Equal(t, "Train", s.DisplayName)
	require.NotNil(t, s.Command)
	assert.Nil(t, s.Pipeline)
	assert.Equal(t, "python train.py --data ${{inputs.data}} --lr ${{inputs.lr}} $[[--seed ${{inputs.seed}}]] --model ${{outputs.model}}",
		s.Command.Template.Source)
	assert.Equal(t, abs(t, "components", "src"), s.Command.Code)
	// Every trial input, in declaration order; those the search space
	// sets are search_space values.
	require.Len(t, s.Inputs, 3)
	assert.Equal(t, []string{"data", "lr", "seed"}, []string{s.Inputs[0].Name, s.Inputs[1].Name, s.Inputs[2].Name})
	assert.Equal(t, plan.Value{Kind: plan.ValueParentInput, Input: "data"}, s.Inputs[0].Value)
	assert.Equal(t, plan.Value{Kind: plan.ValueSearchSpace, Input: "lr"}, s.Inputs[1].Value)
	assert.Equal(t, plan.Value{Kind: plan.ValueSearchSpace, Input: "seed"}, s.Inputs[2].Value)
	require.Len(t, s.Outputs, 1)
	assert.Equal(t, plan.Output{Name: "model", Type: "mlflow_model", Pos: s.Outputs[0].Pos}, s.Outputs[0])

	sw := s.Sweep
	require.NotNil(t, sw)
	seed := int64(42)
	assert.Equal(t, plan.Sampling{Algorithm: plan.SamplingRandom, Seed: &seed, Rule: "sobol", Logbase: "e"}, sw.Sampling)
	assert.Equal(t, plan.Objective{PrimaryMetric: "val_loss", Goal: plan.GoalMinimize}, sw.Objective)
	assert.Equal(t, plan.SweepLimits{MaxTotalTrials: 20, MaxConcurrentTrials: 4, TimeoutSeconds: 3600, TrialTimeoutSeconds: 600}, sw.Limits)
	assert.Equal(t, &plan.EarlyTermination{Policy: plan.PolicyBandit, EvaluationInterval: 2, DelayEvaluation: 5, SlackFactor: 0.1},
		sw.EarlyTermination)
	// Sorted by name, not as written.
	require.Len(t, sw.SearchSpace, 2)
	lr, sd := sw.SearchSpace[0], sw.SearchSpace[1]
	assert.Equal(t, plan.Parameter{Name: "lr", Kind: plan.ParamQLogUniform, Min: -6, Max: -1, Q: 0.001, Pos: lr.Pos}, lr)
	assert.Equal(t, plan.Parameter{Name: "seed", Kind: plan.ParamRandint, Upper: 5, Pos: sd.Pos}, sd)
	assert.Equal(t, 20, lr.Pos.Line)
	assert.Equal(t, "", sw.MetricStep)
}

// TestPlanSweepNestedChoice checks an inline command trial with a choice
// of a scalar and a dict holding a nested parameter and a fixed value.
func TestPlanSweepNestedChoice(t *testing.T) {
	p := compileOK(t, "sweep.yml", Options{})
	s := step(t, p.Pipeline.Steps, "inline")
	assert.Equal(t, "gpu", s.Compute)
	assert.Equal(t, plan.Sampling{Algorithm: plan.SamplingGrid}, s.Sweep.Sampling)
	assert.Equal(t, plan.SweepLimits{MaxTotalTrials: 1000, MaxConcurrentTrials: 1000, TimeoutSeconds: 5184000}, s.Sweep.Limits,
		"Azure ML's defaults")
	assert.Nil(t, s.Sweep.EarlyTermination)
	require.Len(t, s.Sweep.SearchSpace, 1)
	opt := s.Sweep.SearchSpace[0]
	assert.Equal(t, plan.ParamChoice, opt.Kind)
	require.Len(t, opt.Choices, 2)
	assert.Equal(t, plan.Choice{Literal: "adam"}, opt.Choices[0])
	nested := opt.Choices[1].Nested
	require.Len(t, nested, 3)
	assert.Equal(t, plan.Parameter{Name: "name", Kind: plan.ParamChoice, Choices: []plan.Choice{{Literal: "sgd"}}, Pos: nested[0].Pos}, nested[0])
	assert.Equal(t, plan.Parameter{Name: "lr", Kind: plan.ParamChoice, Choices: []plan.Choice{{Literal: "0.1"}, {Literal: "0.01"}},
		Pos: nested[1].Pos}, nested[1])
	assert.Equal(t, plan.Parameter{Name: "nesterov", Kind: plan.ParamChoice, Choices: []plan.Choice{{Literal: "true"}}, Pos: nested[2].Pos}, nested[2])
	// The nested keys set trial inputs too; m keeps its binding.
	for _, n := range []string{"opt", "name", "lr", "nesterov"} {
		assert.Equal(t, plan.Value{Kind: plan.ValueSearchSpace, Input: n}, input(t, s.Inputs, n).Value, n)
	}
	assert.Equal(t, plan.Value{Kind: plan.ValueLiteral, Literal: "0.9"}, input(t, s.Inputs, "m").Value)
}

func TestPlanSweepPipelineTrial(t *testing.T) {
	p := compileOK(t, "sweep.yml", Options{})
	s := step(t, p.Pipeline.Steps, "nested")
	assert.Equal(t, plan.StepSweep, s.Type)
	assert.Nil(t, s.Command)
	require.NotNil(t, s.Pipeline)
	assert.Equal(t, []string{"train", "check"}, stepNames(s.Pipeline.Steps))
	assert.Equal(t, "nested/train", s.Pipeline.Steps[0].Path)
	assert.Equal(t, "", s.Pipeline.Steps[0].Compute, "node: local is known at compile time: the default queue, not settings.default_compute")
	assert.Equal(t, []string{"tune"}, s.DependsOn)
	assert.Equal(t, plan.Value{Kind: plan.ValueSearchSpace, Input: "lr"}, input(t, s.Inputs, "lr").Value)
	assert.Equal(t, plan.Value{Kind: plan.ValueStepOutput, Step: "tune", Output: "model"}, input(t, s.Inputs, "data").Value)
	assert.Equal(t, "train", s.Sweep.MetricStep)
	assert.Equal(t, plan.Sampling{Algorithm: plan.SamplingBayesian}, s.Sweep.Sampling)
	assert.Equal(t, &plan.EarlyTermination{Policy: plan.PolicyTruncationSelection, EvaluationInterval: 1, TruncationPercentage: 20,
		ExcludeFinishedJobs: true}, s.Sweep.EarlyTermination)
	use := step(t, p.Pipeline.Steps, "use")
	assert.Equal(t, []string{"nested"}, use.DependsOn)
	assert.Equal(t, plan.Value{Kind: plan.ValueStepOutput, Step: "nested", Output: "trained"}, input(t, use.Inputs, "m").Value)
}

// TestPlanSweepJob compiles a standalone sweep job file: one sweep step
// whose command names parameters as ${{search_space.x}} and {search_space.x}.
func TestPlanSweepJob(t *testing.T) {
	p := compileOK(t, "sweep_job.yml", Options{})
	assert.Equal(t, "tune-job", p.Name)
	assert.Equal(t, "Tune", p.DisplayName)
	assert.Equal(t, "tuning", p.ExperimentName)
	assert.Equal(t, map[string]string{"team": "ml"}, p.Tags)
	assert.Equal(t, "gpu-cluster", p.Settings.DefaultCompute)
	assert.Equal(t, &plan.Data{Type: "uri_folder", Path: abs(t, "data")}, input(t, p.Pipeline.Inputs, "data").Value.Data)
	require.Len(t, p.Pipeline.Outputs, 1)
	assert.Equal(t, "tune-job", p.Pipeline.Outputs[0].Step)
	assert.Equal(t, "model", p.Pipeline.Outputs[0].StepOutput)

	require.Len(t, p.Pipeline.Steps, 1)
	s := p.Pipeline.Steps[0]
	assert.Equal(t, "tune-job", s.Name, "named after the job")
	assert.Equal(t, plan.StepSweep, s.Type)
	assert.Equal(t, "gpu-cluster", s.Compute)
	var names []string
	for _, in := range s.Inputs {
		names = append(names, in.Name+":"+in.Type+":"+string(in.Value.Kind))
	}
	assert.Equal(t, []string{"data:uri_folder:parent_input", "lr:number:search_space", "batch:integer:search_space",
		"opt:string:search_space"}, names)
	require.Len(t, s.Outputs, 1)
	assert.Equal(t, "model", s.Outputs[0].Parent)
	assert.Equal(t, "mlflow_model", s.Outputs[0].Type)

	c := s.Command
	require.NotNil(t, c)
	var refs []string
	walkRefs(c.Template.Parts, false, func(r *plan.Ref, _ bool) { refs = append(refs, string(r.Kind)+"."+r.Name) })
	assert.Equal(t, []string{"inputs.data", "inputs.lr", "inputs.batch", "inputs.opt", "outputs.model"}, refs)
	assert.Equal(t, plan.Template{Source: c.Template.Source, Parts: c.Template.Parts}, c.Template)
	assert.Contains(t, c.Template.Source, "--batch {search_space.batch}", "the source stays as written")
	rendered := c.Template.Render(func(r plan.Ref) (string, bool) { return "<" + r.Name + ">", true })
	assert.Equal(t, "python train.py --data <data> --lr <lr> --batch <batch> --opt <opt> --out <model>", rendered)
	assert.Equal(t, abs(t, "components", "src"), c.Code)
	assert.Equal(t, map[string]string{"A": "1"}, c.EnvironmentVariables)
	assert.Equal(t, plan.Resources{InstanceCount: 2}, c.Resources)
	assert.Equal(t, &plan.Distribution{Type: "pytorch", ProcessCountPerInstance: 2}, c.Distribution)

	assert.Equal(t, &plan.EarlyTermination{Policy: plan.PolicyMedianStopping, EvaluationInterval: 1}, s.Sweep.EarlyTermination)
	assert.Equal(t, []string{"batch", "lr", "opt"}, []string{s.Sweep.SearchSpace[0].Name, s.Sweep.SearchSpace[1].Name, s.Sweep.SearchSpace[2].Name})
}

// TestPlanSweepJobDefaultName names the step "sweep" when the job has no name.
func TestPlanSweepJobDefaultName(t *testing.T) {
	read := memFS(map[string][]byte{"job.yml": []byte("type: sweep\ntrial:\n  command: echo {search_space.x}\n" +
		"search_space:\n  x: {type: choice, values: [1, 2]}\nobjective: {primary_metric: m, goal: MAXIMIZE}\n")})
	p, diags := Compile("job.yml", Options{ReadFile: read})
	require.False(t, diags.HasErrors(), diags.Error())
	assert.Equal(t, "job", p.Name)
	require.Len(t, p.Pipeline.Steps, 1)
	assert.Equal(t, "sweep", p.Pipeline.Steps[0].Name)
	assert.Equal(t, plan.GoalMaximize, p.Pipeline.Steps[0].Sweep.Objective.Goal)
	assert.Equal(t, []plan.Input{{Name: "x", Type: "integer", Value: plan.Value{Kind: plan.ValueSearchSpace, Input: "x"},
		Pos: plan.Pos{File: "job.yml", Line: 5, Col: 3}}}, p.Pipeline.Steps[0].Inputs)
}
