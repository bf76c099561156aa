package workflows

import (
	"slices"
	"sync"

	"context"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/porch-pipelines/porch/activities/reuse"
)

// decideToRun mocks the reuse decision of every step: the DAG's worker
// declines to decide it (as a worker that runs no steps does), and the
// decision on the default queue says it runs, for the first time; its
// record is written.
func decideToRun(env *testsuite.TestWorkflowEnvironment) {
	env.OnActivity(reuse.DecideReuseHereName, mock.Anything, mock.Anything).Return(
		reuse.Decision{}, temporal.NewNonRetryableApplicationError("declined", reuse.DecideElsewhereType, nil)).Maybe()
	env.OnActivity(reuse.DecideReuseName, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in reuse.DecideInput) (reuse.Decision, error) {
			return reuse.Decision{Key: "key-" + in.Step.Path, Reason: reuse.ReasonFirstRun}, nil
		}).Maybe()
	env.OnActivity(reuse.RecordReuseName, mock.Anything, mock.Anything).Return(nil).Maybe()
}

// TestReusedStepsDoNotRun: a reused step starts no workflow, takes the
// recorded outputs, and its dependants see them and its key; a step that
// runs is recorded, a reused one is not.
func (s *PipelineSuite) TestReusedStepsDoNotRun() {
	p := s.compile("diamond.yaml")
	old := "azureml://datastores/workspaceblobstore/paths/azureml/old-run/a/out/"
	var mu sync.Mutex
	decided := map[string]reuse.DecideInput{}
	recorded := map[string]reuse.Record{}
	s.env.OnActivity(reuse.DecideReuseName, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in reuse.DecideInput) (reuse.Decision, error) {
			mu.Lock()
			decided[in.Step.Path] = in
			for _, r := range in.Records {
				recorded[r.Step] = r
			}
			mu.Unlock()
			d := reuse.Decision{Key: "key-" + in.Step.Path, Reason: "command changed"}
			if in.Step.Path == "a" {
				d.Reason = ""
				d.Reused = &reuse.Record{Key: d.Key, Run: "old-run", Step: "a", Outputs: []reuse.Output{{Name: "out", URI: old}}}
			}
			return d, nil
		})
	s.env.OnActivity(reuse.RecordReuseName, mock.Anything, mock.Anything).Return(func(_ context.Context, in reuse.RecordInput) error {
		mu.Lock()
		for _, r := range in.Records {
			recorded[r.Step] = r
		}
		mu.Unlock()
		return nil
	})
	s.onCommand(nil, nil)
	s.env.ExecuteWorkflow(PipelineName, input(p, "new-run"))
	s.Require().NoError(s.env.GetWorkflowError())

	st := s.states()
	s.Equal(StatusReused, st["a"].Status)
	s.Equal("old-run", st["a"].Reuse.FromRun)
	s.NotContains(s.calls, "a", "a reused step does not run")
	s.Equal(old, s.calls["b"].Inputs[0].Value.Data.Path, "the dependant reads the recorded output")
	s.Equal([]reuse.Upstream{{Input: "src", Step: "a", Output: "out"}}, decided["b"].Upstream)
	s.Equal(StatusSucceeded, st["b"].Status)
	s.Equal("command changed", st["b"].Reuse.Reason)
	s.Equal([]reuse.Upstream{{Input: "x", Step: "b", Output: "named", Ran: true}}, decided["d"].Upstream)
	s.NotContains(recorded, "a")
	s.Equal([]string{"b", "c", "d", "e"}, sortedKeys(recorded), "every step that ran is recorded, carried by a later decision or written at the end")
	s.Equal("key-b", recorded["b"].Key)
	s.Equal("new-run", recorded["b"].Run)
	s.Contains(recorded["b"].Outputs, reuse.Output{Name: "named", URI: "azureml://datastores/workspaceblobstore/paths/new-run/named/"})
	s.Equal("diamond", decided["b"].Pipeline)
	s.Empty(decided["b"].Force)
}

// TestForceRerunIsPassedOn: force_rerun reaches every decision, and the
// run's steps leave no record for later runs to reuse, as Azure ML says
// of a force rerun pipeline's child jobs.
func (s *PipelineSuite) TestForceRerunIsPassedOn() {
	p := s.compile("diamond.yaml")
	p.Settings.ForceRerun = true
	var mu sync.Mutex
	var forces []string
	recorded := map[string]reuse.Record{}
	s.env.OnActivity(reuse.DecideReuseName, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in reuse.DecideInput) (reuse.Decision, error) {
			mu.Lock()
			forces = append(forces, in.Force)
			for _, r := range in.Records {
				recorded[r.Step] = r
			}
			mu.Unlock()
			return reuse.Decision{Key: "k", Reason: in.Force}, nil
		})
	s.env.OnActivity(reuse.RecordReuseName, mock.Anything, mock.Anything).Return(func(_ context.Context, in reuse.RecordInput) error {
		mu.Lock()
		for _, r := range in.Records {
			recorded[r.Step] = r
		}
		mu.Unlock()
		return nil
	}).Maybe()
	s.onCommand(nil, nil)
	s.env.ExecuteWorkflow(PipelineName, input(p, "forced"))
	s.Require().NoError(s.env.GetWorkflowError())
	s.Equal([]string{"force_rerun", "force_rerun", "force_rerun", "force_rerun", "force_rerun"}, forces)
	s.Len(s.calls, 5)
	s.Empty(recorded, "a forced run's steps are not reusable by later runs")
}

func sortedKeys(m map[string]reuse.Record) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
