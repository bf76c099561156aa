package workflows

import (
	"context"
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
