package workflows

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/stretchr/testify/mock"
	enums "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"

	"github.com/porch-pipelines/porch/activities/reuse"
)

// TestADecisionWhoseWorkerWentSilentLetsTheStepRun: the reuse decision
// is scheduled with the step's heartbeat timeout and a start-to-close of
// an hour at most, not two; when every attempt's worker goes silent (a
// heartbeat timeout), the step runs undecided and says why.
func (s *PipelineSuite) TestADecisionWhoseWorkerWentSilentLetsTheStepRun() {
	p := s.compile("diamond.yaml")
	var mu sync.Mutex
	var infos []activity.Info
	s.env.SetOnActivityStartedListener(func(info *activity.Info, _ context.Context, _ converter.EncodedValues) {
		if info.ActivityType.Name == reuse.DecideReuseName {
			mu.Lock()
			infos = append(infos, *info)
			mu.Unlock()
		}
	})
	attempts := 0
	s.env.OnActivity(reuse.DecideReuseName, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in reuse.DecideInput) (reuse.Decision, error) {
			if in.Step.Path == "a" {
				mu.Lock()
				attempts++
				mu.Unlock()
				return reuse.Decision{}, temporal.NewTimeoutError(enums.TIMEOUT_TYPE_HEARTBEAT, nil)
			}
			return reuse.Decision{Key: "key-" + in.Step.Path, Reason: reuse.ReasonFirstRun}, nil
		})
	s.env.OnActivity(reuse.RecordReuseName, mock.Anything, mock.Anything).Return(nil).Maybe()
	s.onCommand(nil, nil)
	s.env.ExecuteWorkflow(PipelineName, input(p, "r"))
	s.Require().NoError(s.env.GetWorkflowError())

	st := s.states()
	s.Equal(StatusSucceeded, st["a"].Status, "the step runs undecided")
	s.Contains(s.calls, "a")
	s.Equal("reuse not decided: the worker deciding it went silent for 30s (it stopped, or lost the server), on every attempt", st["a"].Reuse.Reason)
	s.Equal(3, attempts, "a silent worker's decision runs again, on another worker")
	s.Require().NotEmpty(infos)
	for _, info := range infos {
		s.Equal(heartbeatTimeout, info.HeartbeatTimeout, "the step's heartbeat timeout applies to its decision")
		s.Less(info.Deadline.Sub(info.StartedTime), time.Hour+time.Minute, "a decision's attempt is bounded")
	}
}

// TestTheDAGsWorkerDecidesWithoutAnActivity: a worker that runs the
// default queue's steps decides each step's reuse in a local activity,
// carrying the records of the steps that succeeded before, and no
// DecideReuse activity is scheduled.
func (s *PipelineSuite) TestTheDAGsWorkerDecidesWithoutAnActivity() {
	p := s.compile("diamond.yaml")
	var mu sync.Mutex
	recorded := map[string]string{}
	s.env.OnActivity(reuse.DecideReuseHereName, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in reuse.DecideInput) (reuse.Decision, error) {
			mu.Lock()
			defer mu.Unlock()
			for _, r := range in.Records {
				recorded[r.Step] = in.Step.Path
			}
			return reuse.Decision{Key: "key-" + in.Step.Path, Reason: reuse.ReasonFirstRun}, nil
		})
	s.env.OnActivity(reuse.DecideReuseName, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in reuse.DecideInput) (reuse.Decision, error) {
			s.Failf("a decision took an activity", "step %s", in.Step.Path)
			return reuse.Decision{}, nil
		}).Maybe()
	s.env.OnActivity(reuse.RecordReuseName, mock.Anything, mock.Anything).Return(nil)
	s.onCommand(nil, nil)
	s.env.ExecuteWorkflow(PipelineName, input(p, "r"))
	s.Require().NoError(s.env.GetWorkflowError())

	for path, st := range s.states() {
		s.Equal(StatusSucceeded, st.Status, path)
		s.Equal(reuse.ReasonFirstRun, st.Reuse.Reason, path)
	}
	mu.Lock()
	defer mu.Unlock()
	s.Equal("b", recorded["a"], "a's record rides on the next decision")
}

// TestADecisionTheDAGsWorkerCannotMakeRunsOnTheDefaultQueue: when the
// local decision fails (here, for step b), DecideReuse decides on the
// default queue, with the records the local decision carried.
func (s *PipelineSuite) TestADecisionTheDAGsWorkerCannotMakeRunsOnTheDefaultQueue() {
	p := s.compile("diamond.yaml")
	var mu sync.Mutex
	var remote []reuse.DecideInput
	s.env.OnActivity(reuse.DecideReuseHereName, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in reuse.DecideInput) (reuse.Decision, error) {
			if in.Step.Path == "b" {
				return reuse.Decision{}, errors.New("hashing took too long")
			}
			return reuse.Decision{Key: "key-" + in.Step.Path, Reason: reuse.ReasonFirstRun}, nil
		})
	s.env.OnActivity(reuse.DecideReuseName, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in reuse.DecideInput) (reuse.Decision, error) {
			mu.Lock()
			remote = append(remote, in)
			mu.Unlock()
			return reuse.Decision{Key: "key-" + in.Step.Path, Reason: "decided on the default queue"}, nil
		})
	s.env.OnActivity(reuse.RecordReuseName, mock.Anything, mock.Anything).Return(nil)
	s.onCommand(nil, nil)
	s.env.ExecuteWorkflow(PipelineName, input(p, "r"))
	s.Require().NoError(s.env.GetWorkflowError())

	st := s.states()
	s.Equal("decided on the default queue", st["b"].Reuse.Reason)
	s.Equal(reuse.ReasonFirstRun, st["d"].Reuse.Reason)
	s.Require().Len(remote, 1, "only b's decision ran on the default queue")
	s.Equal("b", remote[0].Step.Path)
	var steps []string
	for _, r := range remote[0].Records {
		steps = append(steps, r.Step)
	}
	s.Contains(steps, "a", "the records the local decision carried ride on the remote one")
}
