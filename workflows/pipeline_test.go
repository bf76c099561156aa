package workflows

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"github.com/stretchr/testify/suite"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/porch-pipelines/porch/activities"
	"github.com/porch-pipelines/porch/activities/command"
	"github.com/porch-pipelines/porch/compiler"
	"github.com/porch-pipelines/porch/compiler/plan"
	"github.com/porch-pipelines/porch/graph"
)

type PipelineSuite struct {
	suite.Suite
	testsuite.WorkflowTestSuite
	env *testsuite.TestWorkflowEnvironment

	mu    sync.Mutex
	calls map[string]command.RunCommandInput
	order []string
}

func TestPipeline(t *testing.T) { suite.Run(t, new(PipelineSuite)) }

func (s *PipelineSuite) SetupTest() {
	s.env = s.NewTestWorkflowEnvironment()
	Register(s.env)
	(&activities.Activities{}).Register(s.env)
	s.calls = map[string]command.RunCommandInput{}
	s.order = nil
}

func (s *PipelineSuite) AfterTest(_, _ string) { s.env.AssertExpectations(s.T()) }

// compile builds a plan with the real compiler from testdata.
func (s *PipelineSuite) compile(name string) *plan.Plan {
	p, diags := compiler.Compile("testdata/"+name, compiler.Options{})
	s.Require().False(diags.HasErrors(), diags.Error())
	return p
}

func input(p *plan.Plan, runID string) PipelineInput {
	return PipelineInput{
		PlanVersion: p.Version, RunID: runID, Name: p.Name, Settings: p.Settings,
		Pipeline: p.Pipeline, Inputs: p.Pipeline.Inputs,
	}
}

// onCommand mocks the command activity. A step listed in durations with a
// positive duration succeeds after that much (test) time; with a negative
// one it blocks until cancelled. A step in fail exits non-zero. Every
// step's reuse decision, unless the test mocked it first, is to run.
func (s *PipelineSuite) onCommand(durations map[string]time.Duration, fail map[string]bool) {
	run := func(ctx context.Context, in command.RunCommandInput) (command.RunCommandResult, error) {
		s.mu.Lock()
		s.calls[in.StepPath] = in
		s.order = append(s.order, in.StepPath)
		s.mu.Unlock()
		if durations[in.StepPath] < 0 {
			<-ctx.Done()
			return command.RunCommandResult{}, ctx.Err()
		}
		if fail[in.StepPath] {
			return command.RunCommandResult{}, temporal.NewNonRetryableApplicationError(
				"command exited with code 3", command.CommandFailedType, nil,
				command.CommandFailure{ExitCode: 3, StderrTail: []string{"boom"}})
		}
		return command.RunCommandResult{Attempt: activity.GetInfo(ctx).Attempt}, nil
	}
	// testify picks the first matching expectation: timed steps first.
	for step, d := range durations {
		if d > 0 {
			s.env.OnActivity(command.RunCommandName, mock.Anything, mock.MatchedBy(func(in command.RunCommandInput) bool {
				return in.StepPath == step
			})).Return(run).After(d).Maybe()
		}
	}
	s.env.OnActivity(command.RunCommandName, mock.Anything, mock.Anything).Return(run).Maybe()
	// After a test's own reuse mocks, which testify tries first.
	decideToRun(s.env)
}

func (s *PipelineSuite) states() map[string]StepState {
	v, err := s.env.QueryWorkflow(StepsQuery)
	s.Require().NoError(err)
	var st []StepState
	s.Require().NoError(v.Get(&st))
	out := map[string]StepState{}
	for _, x := range st {
		out[x.Path] = x
	}
	return out
}

func (s *PipelineSuite) TestBindingsResolveAtRunTime() {
	p := s.compile("diamond.yaml")
	s.onCommand(nil, nil)
	s.env.ExecuteWorkflow(PipelineName, input(p, "diamond-run1"))
	s.Require().True(s.env.IsWorkflowCompleted())
	s.Require().NoError(s.env.GetWorkflowError())

	a, b, d, e := s.calls["a"], s.calls["b"], s.calls["d"], s.calls["e"]
	s.Equal("hello", a.Inputs[0].Value.Literal)
	aOut := "azureml://datastores/workspaceblobstore/paths/azureml/diamond-run1/a/out/"
	s.Equal(aOut, a.Outputs[0].Path)
	s.Equal(plan.ValueData, b.Inputs[0].Value.Kind)
	s.Equal(aOut, b.Inputs[0].Value.Data.Path)
	s.Equal("1e-3", b.Inputs[1].Value.Literal, "literals reach the command as written")
	named := "azureml://datastores/workspaceblobstore/paths/diamond-run1/named/"
	s.Equal(named, b.Outputs[0].Path, "${{name}} in an output path is the run id")
	s.Equal(named, d.Inputs[0].Value.Data.Path)
	s.Equal("azureml://datastores/workspaceblobstore/paths/azureml/diamond-run1/c/artifacts/", e.Inputs[0].Value.Data.Path)
	s.Equal("azureml://datastores/workspaceblobstore/paths/azureml/diamond-run1/c/report", s.calls["c"].Outputs[0].Path,
		"a uri_file output names a file, not a folder")

	st := s.states()
	for _, step := range []string{"a", "b", "c", "d", "e"} {
		s.Equal(StatusSucceeded, st[step].Status, step)
		s.Equal("diamond-run1/"+step, st[step].WorkflowID)
	}
	s.Contains(st["a"].Outputs, OutputLocation{Name: "out", URI: aOut})
}

func (s *PipelineSuite) TestStepsStartWhenTheirOwnDependenciesFinish() {
	p := s.compile("diamond.yaml")
	// c is slow; b and d hang off a only, so they must finish long before c.
	s.onCommand(map[string]time.Duration{"a": time.Minute, "b": time.Minute, "c": time.Hour, "d": time.Minute, "e": time.Minute}, nil)
	s.env.ExecuteWorkflow(PipelineName, input(p, "r"))
	s.Require().NoError(s.env.GetWorkflowError())
	st := s.states()
	s.True(st["b"].Started.Before(st["a"].Ended.Add(time.Second)), "b starts as soon as a ends")
	s.False(st["d"].Started.Before(st["b"].Ended), "d waits for b")
	s.True(st["d"].Ended.Before(st["c"].Ended), "d does not wait for the slow c")
	s.False(st["e"].Started.Before(st["c"].Ended), "e waits for c")
}

func (s *PipelineSuite) TestFirstFailureCancelsRunningSteps() {
	p := s.compile("failfast.yaml")
	s.onCommand(map[string]time.Duration{"slow": -1}, map[string]bool{"fail": true})
	s.env.ExecuteWorkflow(PipelineName, input(p, "r"))
	err := s.env.GetWorkflowError()
	s.Require().Error(err)
	var app *temporal.ApplicationError
	s.Require().True(errors.As(err, &app))
	s.Equal(StepFailedType, app.Type())
	var f StepFailure
	s.Require().NoError(app.Details(&f))
	s.Equal("fail", f.Step)

	st := s.states()
	s.Equal(StatusFailed, st["fail"].Status)
	s.Equal("command exited with code 3", st["fail"].Error)
	s.Equal(StatusCanceled, st["slow"].Status, "a running sibling is cancelled")
	s.Equal(StatusSkipped, st["after"].Status)
}

func (s *PipelineSuite) TestContinueOnStepFailureFinishesIndependentBranches() {
	p := s.compile("branches.yaml")
	s.onCommand(map[string]time.Duration{"slow": time.Hour}, map[string]bool{"fail": true})
	s.env.ExecuteWorkflow(PipelineName, input(p, "r"))
	err := s.env.GetWorkflowError()
	s.Require().Error(err)
	s.Contains(err.Error(), `step "fail" failed`)
	st := s.states()
	s.Equal(StatusFailed, st["fail"].Status)
	s.Equal(StatusSkipped, st["after"].Status)
	s.Equal(StatusSucceeded, st["slow"].Status, "the independent branch finishes")
	s.Equal(StatusSucceeded, st["ok"].Status)
	s.NotContains(s.order, "after")
}

func (s *PipelineSuite) TestNestedPipelinesAreChildDAGs() {
	p := s.compile("nested.yaml")
	s.onCommand(nil, nil)
	s.env.ExecuteWorkflow(PipelineName, input(p, "n1"))
	s.Require().NoError(s.env.GetWorkflowError())

	first, second, last := s.calls["first/make"], s.calls["second/make"], s.calls["last"]
	s.Equal("3", first.Inputs[0].Value.Literal)
	s.Equal(plan.ValueNone, first.Inputs[1].Value.Kind, "an unset optional input stays unset")
	s.Equal("5", second.Inputs[0].Value.Literal)
	firstOut := first.Outputs[0].Path
	s.Equal(firstOut, second.Inputs[1].Value.Data.Path, "the second copy reads the first copy's output")
	s.Equal(second.Outputs[0].Path, last.Inputs[0].Value.Data.Path)
	s.NotEqual(firstOut, second.Outputs[0].Path)
}

// TestGraphQueryAnswersTheDAG asks a run for its graph: its steps, the
// nested pipelines' inside theirs, and an edge per step output another
// step reads, labelled with that output and input.
func (s *PipelineSuite) TestGraphQueryAnswersTheDAG() {
	p := s.compile("nested.yaml")
	s.onCommand(nil, nil)
	s.env.ExecuteWorkflow(PipelineName, input(p, "g1"))
	s.Require().NoError(s.env.GetWorkflowError())
	v, err := s.env.QueryWorkflow(GraphQuery)
	s.Require().NoError(err)
	var g graph.Graph
	s.Require().NoError(v.Get(&g))
	var paths []string
	g.Walk(func(n graph.Node) { paths = append(paths, n.Path) })
	s.Equal([]string{"first", "first/make", "second", "second/make", "last"}, paths)
	s.Equal([]graph.Edge{
		{From: "first", Output: "result", To: "second", Input: "seed"},
		{From: "second", Output: "result", To: "last", Input: "r"},
	}, g.Edges)
	s.Equal(plan.StepPipeline, g.Nodes[0].Type)
	s.Equal("parent.inputs.count", g.Nodes[0].Pipeline.Nodes[0].Inputs[0].From)
	s.Equal("3", g.Inputs[0].Value)
}

// limits.timeout is tested on the real server (worker/integration_test.go):
// the test environment does not enforce activity timeouts on mocks.

func TestUnknownPlanVersionIsRefused(t *testing.T) {
	var ts testsuite.WorkflowTestSuite
	env := ts.NewTestWorkflowEnvironment()
	Register(env)
	env.ExecuteWorkflow(PipelineName, PipelineInput{PlanVersion: 99, RunID: "r"})
	err := env.GetWorkflowError()
	require.Error(t, err)
	require.Contains(t, err.Error(), "plan format version 99 is not supported")
}

// TestSweepOutputPathReachesTheSweep runs a sweep job whose output names a
// path: the sweep step gets it resolved, and the run's output is where the
// sweep reports it.
func (s *PipelineSuite) TestSweepOutputPathReachesTheSweep() {
	p := s.compile("sweep_path.yaml")
	var got SweepStepInput
	s.env.OnWorkflow(SweepStepName, mock.Anything, mock.Anything).Return(
		func(_ workflow.Context, in SweepStepInput) (SweepStepResult, error) {
			got = in
			return SweepStepResult{Outputs: []OutputLocation{{Name: "model", URI: in.Outputs[0].Path}}}, nil
		})
	s.env.ExecuteWorkflow(PipelineName, input(p, "tune-run1"))
	s.Require().NoError(s.env.GetWorkflowError())
	want := "azureml://datastores/workspaceblobstore/paths/best/tune-run1/"
	s.Require().Len(got.Outputs, 1)
	s.Equal("model", got.Outputs[0].Name)
	s.Equal(want, got.Outputs[0].Path)
	var res PipelineResult
	s.Require().NoError(s.env.GetWorkflowResult(&res))
	s.Equal([]OutputLocation{{Name: "model", URI: want}}, res.Outputs)
}

func (s *PipelineSuite) TestStepsQueryAnswersPages() {
	p := s.compile("diamond.yaml")
	s.onCommand(nil, nil)
	s.env.ExecuteWorkflow(PipelineName, input(p, "r"))
	s.Require().NoError(s.env.GetWorkflowError())
	var paths []string
	for page := (StepsPage{Max: 2}); ; {
		v, err := s.env.QueryWorkflow(StepsQuery, page)
		s.Require().NoError(err)
		var a StepsPageAnswer
		s.Require().NoError(v.Get(&a))
		s.Equal(5, a.Total)
		s.LessOrEqual(len(a.Steps), 2)
		for _, st := range a.Steps {
			paths = append(paths, st.Path)
		}
		if a.Next == a.Total {
			break
		}
		page.Start = a.Next
	}
	s.Equal([]string{"a", "b", "c", "d", "e"}, paths, "every step once, in plan order")
	v, err := s.env.QueryWorkflow(StepsQuery, StepsPage{Start: 9})
	s.Require().NoError(err)
	var past StepsPageAnswer
	s.Require().NoError(v.Get(&past))
	s.Equal(StepsPageAnswer{Steps: []StepState{}, Next: 9, Total: 5}, past, "a page past the end is empty")
	_, err = s.env.QueryWorkflow(StepsQuery, StepsPage{Start: -1})
	s.ErrorContains(err, "cannot be negative")

	v, err = s.env.QueryWorkflow(StepsQuery, StepsPage{Start: 1, Max: 3, Gzip: true})
	s.Require().NoError(err)
	var gz StepsPageAnswer
	s.Require().NoError(v.Get(&gz))
	s.Empty(gz.Steps)
	s.Equal(4, gz.Next)
	js, err := gunzipBytes(gz.Gzip)
	s.Require().NoError(err)
	var zipped []StepState
	s.Require().NoError(json.Unmarshal(js, &zipped))
	s.Require().Len(zipped, 3)
	s.Equal([]string{"b", "c", "d"}, []string{zipped[0].Path, zipped[1].Path, zipped[2].Path}, "a gzipped page holds the same steps")
}
