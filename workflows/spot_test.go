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
	"github.com/porch-pipelines/porch/activities/command"
	"github.com/porch-pipelines/porch/activities/parallel"
	"github.com/porch-pipelines/porch/activities/stepio"
	"github.com/porch-pipelines/porch/compiler/plan"
)

// spotCall is one RunCommand attempt as the activity saw it.
type spotCall struct {
	queue string
	in    command.RunCommandInput
}

// runSpotStep runs CommandStep for a spot step whose attempts end as
// outcome says (nil: success) and returns the attempts and the result.
func runSpotStep(t *testing.T, outcome func(n int) error) ([]spotCall, command.RunCommandResult, error) {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	Register(env)
	(&activities.Activities{}).Register(env)
	var mu sync.Mutex
	var calls []spotCall
	env.OnActivity(command.RunCommandName, mock.Anything, mock.Anything).Return(
		func(ctx context.Context, in command.RunCommandInput) (command.RunCommandResult, error) {
			mu.Lock()
			calls = append(calls, spotCall{queue: activity.GetInfo(ctx).TaskQueue, in: in})
			n := len(calls)
			mu.Unlock()
			if err := outcome(n); err != nil {
				return command.RunCommandResult{}, err
			}
			return command.RunCommandResult{Attempt: in.PriorAttempts + activity.GetInfo(ctx).Attempt}, nil
		})
	in := CommandStepInput{Compute: "gpu", Run: command.RunCommandInput{Step: stepio.Step{RunID: "r", StepPath: "train",
		Command: plan.Command{Resources: plan.Resources{JobTier: plan.TierSpot}}}}}
	env.ExecuteWorkflow(CommandStep, in)
	require.True(t, env.IsWorkflowCompleted())
	var r command.RunCommandResult
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
		return temporal.NewNonRetryableApplicationError("command exited with code 3", command.CommandFailedType, nil)
	})
	require.ErrorContains(t, err, "exited with code 3")
	require.Len(t, calls, 1)
}

func TestSpotStateSummary(t *testing.T) {
	require.Equal(t, "", SpotState{}.Summary())
	require.Equal(t, "preempted 2 times on spot workers", SpotState{Preemptions: 2}.Summary())
	require.Equal(t, "2 mini-batches preempted 3 times: moving to dedicated workers", SpotState{Preemptions: 7, Dedicated: true, Moved: 2}.Summary())
	require.Equal(t, "preempted 3 times: moving to dedicated workers", SpotState{Preemptions: 3, Dedicated: true}.Summary())
}

// TestSpotParallelStepMovesAMiniBatchAfterThreePreemptions: each
// mini-batch counts its own preemptions; one preempted three times runs
// on dedicated workers while the others stay on spot, and the step's own
// activities run on the spot queue.
func TestSpotParallelStepMovesAMiniBatchAfterThreePreemptions(t *testing.T) {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	Register(env)
	(&activities.Activities{}).Register(env)
	ref := parallel.ParallelStepRef{RunID: "r", StepPath: "score", Datastore: "ws", Digest: "d"}
	var planQueue string
	env.OnActivity(parallel.PlanMiniBatchesName, mock.Anything, mock.Anything).Return(
		func(ctx context.Context, _ parallel.PlanMiniBatchesInput) (parallel.ParallelPlan, error) {
			planQueue = activity.GetInfo(ctx).TaskQueue
			return parallel.ParallelPlan{Ref: ref, Batches: 3, Items: 3, Instances: 1, PerInstance: 2}, nil
		})
	env.OnActivity(parallel.FinishParallelName, mock.Anything, mock.Anything).Return(parallel.FinishParallelResult{}, nil)
	env.OnActivity(parallel.ReportParallelProgressName, mock.Anything, mock.Anything).Return(nil).Maybe()
	env.OnActivity(parallel.MonitorResourcesName, mock.Anything, mock.Anything).Return(nil).Maybe()
	var mu sync.Mutex
	queues := map[int][]string{}
	env.OnActivity(parallel.RunMiniBatchName, mock.Anything, mock.Anything).Return(
		func(ctx context.Context, in parallel.MiniBatchInput) (parallel.MiniBatchResult, error) {
			q := activity.GetInfo(ctx).TaskQueue
			mu.Lock()
			queues[in.Index] = append(queues[in.Index], q)
			mu.Unlock()
			if in.Index == 1 && q == "porch-compute-gpu-spot" {
				return parallel.MiniBatchResult{}, temporal.NewHeartbeatTimeoutError()
			}
			return parallel.MiniBatchResult{Index: in.Index, Items: 1, Returned: 1}, nil
		})
	in := ParallelStepInput{Compute: "gpu", Plan: parallel.PlanMiniBatchesInput{RunID: "r", StepPath: "score", Parallel: plan.Parallel{
		MiniBatchErrorThreshold: -1, ErrorThreshold: -1, AllowedFailedPercent: 100,
		Retry: plan.ParallelRetry{MaxRetries: 0, TimeoutSeconds: 60}, TaskOverheadTimeoutSeconds: 30,
		Resources: plan.Resources{JobTier: plan.TierSpot},
	}}}
	env.ExecuteWorkflow(ParallelStepName, in)
	require.NoError(t, env.GetWorkflowError())
	var res ParallelStepResult
	require.NoError(t, env.GetWorkflowResult(&res))
	require.Equal(t, 3, res.Counters.Succeeded)
	require.Equal(t, 0, res.Counters.Failed, "a preemption is not a failed mini-batch")
	require.Equal(t, "porch-compute-gpu-spot", planQueue)
	spot := "porch-compute-gpu-spot"
	require.Equal(t, map[int][]string{0: {spot}, 1: {spot, spot, spot, "porch-compute-gpu"}, 2: {spot}}, queues)
	v, err := env.QueryWorkflow(SpotQuery)
	require.NoError(t, err)
	var st SpotState
	require.NoError(t, v.Get(&st))
	require.Equal(t, SpotState{Preemptions: 3, Dedicated: true, Moved: 1}, st)
}
