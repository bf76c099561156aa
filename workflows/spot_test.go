package workflows

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/porch-pipelines/porch/activities"
	"github.com/porch-pipelines/porch/compiler/plan"
)

// spotCall is one RunCommand attempt as the activity saw it.
type spotCall struct {
	queue string
	in    activities.RunCommandInput
}

// runSpotStep runs CommandStep for a spot step whose attempts end as
// outcome says (nil: success) and returns the attempts and the result.
func runSpotStep(t *testing.T, outcome func(n int) error) ([]spotCall, activities.RunCommandResult, error) {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	Register(env)
	(&activities.Activities{}).Register(env)
	var mu sync.Mutex
	var calls []spotCall
	env.OnActivity(activities.RunCommandName, mock.Anything, mock.Anything).Return(
		func(ctx context.Context, in activities.RunCommandInput) (activities.RunCommandResult, error) {
			mu.Lock()
			calls = append(calls, spotCall{queue: activity.GetInfo(ctx).TaskQueue, in: in})
			n := len(calls)
			mu.Unlock()
			if err := outcome(n); err != nil {
				return activities.RunCommandResult{}, err
			}
			return activities.RunCommandResult{Attempt: in.PriorAttempts + activity.GetInfo(ctx).Attempt}, nil
		})
	in := CommandStepInput{Compute: "gpu", Run: activities.RunCommandInput{RunID: "r", StepPath: "train",
		Command: plan.Command{Resources: plan.Resources{JobTier: plan.TierSpot}}}}
	env.ExecuteWorkflow(CommandStep, in)
	require.True(t, env.IsWorkflowCompleted())
	var r activities.RunCommandResult
	err := env.GetWorkflowError()
	if err == nil {
		require.NoError(t, env.GetWorkflowResult(&r))
	}
	return calls, r, err
}

// TestSpotStepMovesToDedicatedWorkersAfterThreePreemptions: each lost
// heartbeat is a preemption on the spot queue; the fourth attempt runs on
// the compute's own queue, and its step log says why.
func TestSpotStepMovesToDedicatedWorkersAfterThreePreemptions(t *testing.T) {
	calls, r, err := runSpotStep(t, func(n int) error {
		if n <= spotPreemptions {
			return temporal.NewHeartbeatTimeoutError()
		}
		return nil
	})
	require.NoError(t, err)
	require.Len(t, calls, 4)
	for i, c := range calls[:3] {
		require.Equal(t, "porch-compute-gpu-spot", c.queue, "attempt %d", i+1)
		require.Equal(t, int32(i), c.in.PriorAttempts)
	}
	require.Equal(t, "porch-compute-gpu", calls[3].queue)
	require.Equal(t, []string{"porch: preempted 3 times: moving to dedicated workers"}, calls[3].in.Notes)
	require.Contains(t, calls[1].in.Notes[0], "preempted 1 of 3 times")
	require.Equal(t, int32(4), r.Attempt)
}

// TestSpotStepKeepsItsRetryBudgetForOtherFailures: a lost worker that is
// not a heartbeat timeout uses up the usual three attempts, all on spot,
// and a failing command is never retried.
func TestSpotStepKeepsItsRetryBudgetForOtherFailures(t *testing.T) {
	calls, _, err := runSpotStep(t, func(int) error { return errors.New("worker lost its disk") })
	require.Error(t, err)
	require.Len(t, calls, infraAttempts)
	for _, c := range calls {
		require.Equal(t, "porch-compute-gpu-spot", c.queue)
	}
	calls, _, err = runSpotStep(t, func(int) error {
		return temporal.NewNonRetryableApplicationError("command exited with code 3", activities.CommandFailedType, nil)
	})
	require.ErrorContains(t, err, "exited with code 3")
	require.Len(t, calls, 1)
}

func TestSpotStateSummary(t *testing.T) {
	require.Equal(t, "", SpotState{}.Summary())
	require.Equal(t, "preempted 2 of 3 times on spot workers", SpotState{Preemptions: 2}.Summary())
	require.Equal(t, "preempted 3 times: moving to dedicated workers", SpotState{Preemptions: 3, Dedicated: true}.Summary())
}
