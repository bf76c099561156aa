package workflows

import (
	"context"
	"strconv"
	"testing"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/porch-pipelines/porch/activities"
	"github.com/porch-pipelines/porch/activities/command"
	"github.com/porch-pipelines/porch/activities/stepio"
	sweepacts "github.com/porch-pipelines/porch/activities/sweep"
	"github.com/porch-pipelines/porch/compiler/plan"
	"github.com/porch-pipelines/porch/sweep"
)

// sweepEnv is a test environment for a grid sweep over "q" in values, whose
// trials report the metric value given by score.
func sweepEnv(t *testing.T, values []string, concurrent int, score map[string]float64) (*testsuite.TestWorkflowEnvironment, SweepStepInput, *[]string) {
	var ts testsuite.WorkflowTestSuite
	env := ts.NewTestWorkflowEnvironment()
	Register(env)
	(&activities.Activities{}).Register(env)
	choices := make([]plan.Choice, len(values))
	for i, v := range values {
		choices[i] = plan.Choice{Literal: v}
	}
	step := plan.Step{
		Name: "tune", Path: "tune", Type: plan.StepSweep,
		Command: &plan.Command{Template: plan.Template{Source: "train ${{inputs.q}}"}},
		Inputs:  []plan.Input{{Name: "q", Type: "string", Value: plan.Value{Kind: plan.ValueSearchSpace, Input: "q"}}},
		Outputs: []plan.Output{{Name: "model", Type: "uri_folder"}},
		Sweep: &plan.Sweep{
			SearchSpace: []plan.Parameter{{Name: "q", Kind: plan.ParamChoice, Choices: choices}},
			Sampling:    plan.Sampling{Algorithm: plan.SamplingGrid},
			Objective:   plan.Objective{PrimaryMetric: "score", Goal: plan.GoalMaximize},
			Limits:      plan.SweepLimits{MaxTotalTrials: 10, MaxConcurrentTrials: concurrent, TimeoutSeconds: 3600},
		},
	}
	// The trial each child ran, by its step path.
	var ran []string
	trialParam := map[string]string{}
	env.OnWorkflow(CommandStepName, mock.Anything, mock.Anything).Return(
		func(_ workflow.Context, in CommandStepInput) (command.RunCommandResult, error) {
			ran = append(ran, in.Run.StepPath)
			trialParam[in.Run.StepPath] = in.Run.Inputs[0].Value.Literal
			return command.RunCommandResult{Outputs: []stepio.OutputLocation{{Name: "model", URI: "uri://" + in.Run.StepPath}}}, nil
		})
	env.OnActivity(sweepacts.ReadTrialMetricsName, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in sweepacts.ReadTrialMetricsInput) ([]sweepacts.TrialMetrics, error) {
			var out []sweepacts.TrialMetrics
			for _, f := range in.Files {
				m := sweepacts.TrialMetrics{Trial: f.Trial, Offset: f.Offset}
				if v, ok := score[trialParam[f.StepPath]]; ok && f.Offset == 0 {
					m.Offset = 1
					m.Points = []sweep.Point{{Step: 1, Value: v}}
				}
				out = append(out, m)
			}
			return out, nil
		})
	env.OnActivity(sweepacts.FinishSweepName, mock.Anything, mock.Anything).Return("trials.csv", nil)
	in := SweepStepInput{PlanVersion: plan.Version, RunID: "r", Name: "p", Settings: plan.Settings{DefaultDatastore: "ws"}, Step: step}
	return env, in, &ran
}

func TestSweepStepRunsTheGridAndReportsTheBestTrial(t *testing.T) {
	env, in, ran := sweepEnv(t, []string{"a", "b", "c"}, 2, map[string]float64{"a": 0.2, "b": 0.9, "c": 0.5})
	env.ExecuteWorkflow(SweepStepName, in)
	require.NoError(t, env.GetWorkflowError())
	var res SweepStepResult
	require.NoError(t, env.GetWorkflowResult(&res))
	require.Equal(t, 1, res.BestTrial)
	require.Equal(t, []OutputLocation{{Name: "model", URI: "uri://tune/trial-1"}}, res.Outputs)
	require.ElementsMatch(t, []string{"tune/trial-0", "tune/trial-1", "tune/trial-2"}, *ran)
}

func TestSweepStepFailsWhenNoTrialReportsTheMetric(t *testing.T) {
	env, in, _ := sweepEnv(t, []string{"a"}, 1, map[string]float64{})
	env.ExecuteWorkflow(SweepStepName, in)
	err := env.GetWorkflowError()
	require.Error(t, err)
	require.Contains(t, ErrorMessage(err), `no trial completed with primary metric "score" (1 completed)`)
}

func TestSweepStepContinuesAsNewCarryingItsTrials(t *testing.T) {
	env, in, _ := sweepEnv(t, []string{"a", "b", "c", "d"}, 2, map[string]float64{"a": 1, "b": 2, "c": 3, "d": 4})
	env.SetContinueAsNewSuggested(true)
	env.ExecuteWorkflow(SweepStepName, in)
	var can *workflow.ContinueAsNewError
	require.ErrorAs(t, env.GetWorkflowError(), &can)
	var next SweepStepInput
	require.NoError(t, converter.GetDefaultDataConverter().FromPayloads(can.Input, &next))
	require.NotNil(t, next.State)
	require.Len(t, next.State.Trials, 2, "the first window drained, the rest is left for the next run")
	for i, tr := range next.State.Trials {
		require.Equal(t, TrialCompleted, tr.Status, "trial "+strconv.Itoa(i))
		require.Len(t, tr.Points, 1)
	}
}

// TestSweepStepCopiesTheBestTrialsOutputToItsPath gives the sweep's output
// a path: the best trial's output is copied there, and the sweep's output
// is there, not in the trial's folder.
func TestSweepStepCopiesTheBestTrialsOutputToItsPath(t *testing.T) {
	env, in, _ := sweepEnv(t, []string{"a", "b", "c"}, 1, map[string]float64{"a": 0.2, "b": 0.9, "c": 0.5})
	const path = "azureml://datastores/ws/paths/best/r/"
	in.Outputs = []plan.Output{{Name: "model", Type: "uri_folder", Path: path}}
	var published []sweepacts.PublishSweepOutputsInput
	env.OnActivity(sweepacts.PublishSweepOutputsName, mock.Anything, mock.Anything).Return(
		func(_ context.Context, p sweepacts.PublishSweepOutputsInput) error {
			published = append(published, p)
			return nil
		})
	env.ExecuteWorkflow(SweepStepName, in)
	require.NoError(t, env.GetWorkflowError())
	var res SweepStepResult
	require.NoError(t, env.GetWorkflowResult(&res))
	require.Equal(t, 1, res.BestTrial)
	require.Equal(t, []sweepacts.PublishSweepOutputsInput{{StepPath: "tune", Trial: 1,
		Outputs: []sweepacts.OutputCopy{{Name: "model", From: "uri://tune/trial-1", To: path}}}}, published)
	require.Equal(t, []OutputLocation{{Name: "model", URI: path}}, res.Outputs)
}

// TestSweepStepCopiesNothingWhenNoTrialCompletes fails the sweep without
// touching the output's path.
func TestSweepStepCopiesNothingWhenNoTrialCompletes(t *testing.T) {
	env, in, _ := sweepEnv(t, []string{"a"}, 1, map[string]float64{})
	in.Outputs = []plan.Output{{Name: "model", Type: "uri_folder", Path: "azureml://datastores/ws/paths/best/"}}
	env.OnActivity(sweepacts.PublishSweepOutputsName, mock.Anything, mock.Anything).Return(nil).Never()
	env.ExecuteWorkflow(SweepStepName, in)
	require.Error(t, env.GetWorkflowError())
}
