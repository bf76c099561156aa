package workflows

import (
	"context"
	"testing"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	enums "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/porch-pipelines/porch/activities"
	"github.com/porch-pipelines/porch/activities/parallel"
	"github.com/porch-pipelines/porch/activities/stepio"
	"github.com/porch-pipelines/porch/compiler/plan"
)

// parallelEnv is a test environment whose planner reports batches
// mini-batches run two at a time.
func parallelEnv(t *testing.T, batches int) (*testsuite.TestWorkflowEnvironment, ParallelStepInput) {
	var ts testsuite.WorkflowTestSuite
	env := ts.NewTestWorkflowEnvironment()
	Register(env)
	(&activities.Activities{}).Register(env)
	ref := parallel.ParallelStepRef{RunID: "r", StepPath: "score", Datastore: "ws", Digest: "d"}
	env.OnActivity(parallel.PlanMiniBatchesName, mock.Anything, mock.Anything).Return(
		parallel.ParallelPlan{Ref: ref, Batches: batches, Items: int64(batches), Instances: 1, PerInstance: 2}, nil).Maybe()
	env.OnActivity(parallel.FinishParallelName, mock.Anything, mock.Anything).Return(parallel.FinishParallelResult{}, nil).Maybe()
	env.OnActivity(parallel.ReportParallelProgressName, mock.Anything, mock.Anything).Return(nil).Maybe()
	env.OnActivity(parallel.MonitorResourcesName, mock.Anything, mock.Anything).Return(nil).Maybe()
	in := ParallelStepInput{Plan: parallel.PlanMiniBatchesInput{RunID: "r", StepPath: "score", Parallel: plan.Parallel{
		MiniBatchErrorThreshold: -1, ErrorThreshold: -1, AllowedFailedPercent: 100,
		Retry: plan.ParallelRetry{MaxRetries: 2, TimeoutSeconds: 60}, TaskOverheadTimeoutSeconds: 30,
		FirstTaskCreationTimeoutSeconds: 600, ResourceMonitorIntervalSeconds: 600,
	}}}
	return env, in
}

func succeed(_ context.Context, in parallel.MiniBatchInput) (parallel.MiniBatchResult, error) {
	return parallel.MiniBatchResult{Index: in.Index, Items: 1, Returned: 1, Node: "n1"}, nil
}

func TestParallelStepContinuesAsNewWithCountersOnly(t *testing.T) {
	env, in := parallelEnv(t, 10)
	env.OnActivity(parallel.RunMiniBatchName, mock.Anything, mock.Anything).Return(succeed)
	env.SetContinueAsNewSuggested(true)
	env.ExecuteWorkflow(ParallelStepName, in)

	require.True(t, env.IsWorkflowCompleted())
	var can *workflow.ContinueAsNewError
	require.ErrorAs(t, env.GetWorkflowError(), &can)
	var next ParallelStepInput
	require.NoError(t, converter.GetDefaultDataConverter().FromPayloads(can.Input, &next))
	require.NotNil(t, next.State)
	// The window of 4 (2 processes, one mini-batch waiting for each)
	// drained before continuing: nothing in flight is lost.
	require.Equal(t, 4, next.State.Next)
	require.Equal(t, 4, next.State.Counters.Succeeded)
	require.Equal(t, 0, next.State.Counters.Running)
	require.Equal(t, []string{"n1"}, next.State.Nodes)
}

func TestParallelStepBeforePrefetchKeepsOneMiniBatchPerProcess(t *testing.T) {
	env, in := parallelEnv(t, 10)
	env.OnActivity(parallel.RunMiniBatchName, mock.Anything, mock.Anything).Return(succeed)
	env.OnGetVersion(prefetchChange, workflow.DefaultVersion, 1).Return(workflow.DefaultVersion)
	env.SetContinueAsNewSuggested(true)
	env.ExecuteWorkflow(ParallelStepName, in)

	var can *workflow.ContinueAsNewError
	require.ErrorAs(t, env.GetWorkflowError(), &can)
	var next ParallelStepInput
	require.NoError(t, converter.GetDefaultDataConverter().FromPayloads(can.Input, &next))
	require.Equal(t, 2, next.State.Next, "a history from before prefetch replays with its window of 2")
}

func TestParallelStepCarriedStateFinishesTheRest(t *testing.T) {
	env, in := parallelEnv(t, 10)
	seen := map[int]bool{}
	env.OnActivity(parallel.RunMiniBatchName, mock.Anything, mock.Anything).Return(
		func(ctx context.Context, in parallel.MiniBatchInput) (parallel.MiniBatchResult, error) {
			seen[in.Index] = true
			return succeed(ctx, in)
		})
	in.State = &ParallelState{
		Plan:     parallel.ParallelPlan{Batches: 10, Instances: 1, PerInstance: 2},
		Next:     6,
		Counters: parallel.ParallelCounters{Batches: 10, Succeeded: 6, Items: 6},
	}
	env.ExecuteWorkflow(ParallelStepName, in)
	require.NoError(t, env.GetWorkflowError())
	var res ParallelStepResult
	require.NoError(t, env.GetWorkflowResult(&res))
	require.Equal(t, 10, res.Counters.Succeeded)
	require.Equal(t, map[int]bool{6: true, 7: true, 8: true, 9: true}, seen, "a continued step does not plan or rerun")
}

func TestParallelStepInitFailureFailsAtOnce(t *testing.T) {
	env, in := parallelEnv(t, 50)
	calls := 0
	env.OnActivity(parallel.RunMiniBatchName, mock.Anything, mock.Anything).Return(
		func(context.Context, parallel.MiniBatchInput) (parallel.MiniBatchResult, error) {
			calls++
			return parallel.MiniBatchResult{}, temporal.NewNonRetryableApplicationError(
				"mini-batch 0: init() raised ImportError: no module named sklearn", parallel.EntryScriptInitFailedType, nil)
		})
	env.ExecuteWorkflow(ParallelStepName, in)
	err := env.GetWorkflowError()
	require.Error(t, err)
	require.Contains(t, ErrorMessage(err), "the entry script's init() failed: mini-batch 0: init() raised ImportError")
	require.LessOrEqual(t, calls, 4, "only the first window ran; thresholds do not apply to a broken init()")
}

func TestParallelStepWithoutWorkersHitsFirstTaskCreationTimeout(t *testing.T) {
	env, in := parallelEnv(t, 5)
	in.Compute = "gpu"
	env.OnActivity(parallel.RunMiniBatchName, mock.Anything, mock.Anything).Return(
		parallel.MiniBatchResult{}, temporal.NewTimeoutError(enums.TIMEOUT_TYPE_SCHEDULE_TO_START, nil))
	env.ExecuteWorkflow(ParallelStepName, in)
	err := env.GetWorkflowError()
	require.Error(t, err)
	require.Contains(t, ErrorMessage(err), "no mini-batch started within first_task_creation_timeout (600s): no worker serves compute \"gpu\"; start one with `porch worker --compute gpu`")
}

func TestCrossedThreshold(t *testing.T) {
	p := plan.Parallel{MiniBatchErrorThreshold: -1, ErrorThreshold: -1, AllowedFailedPercent: 100}
	c := parallel.ParallelCounters{Batches: 10, Succeeded: 5, Failed: 5, FailedItems: 50}
	require.Empty(t, crossedThreshold(p, c), "-1, -1 and 100 ignore every failure")
	p.AllowedFailedPercent = 50
	require.Empty(t, crossedThreshold(p, c), "exactly 50% is allowed")
	c.Failed = 6
	require.Contains(t, crossedThreshold(p, c), "allowed_failed_percent crossed: 6 of 10 mini-batches failed (60.0%)")
	p.ErrorThreshold = 49
	require.Contains(t, crossedThreshold(p, c), "error_threshold crossed: 50 items failed, more than the 49 allowed")
	p.MiniBatchErrorThreshold = 6
	require.Contains(t, crossedThreshold(p, c), "error_threshold crossed", "6 failed mini-batches are allowed")
	p.MiniBatchErrorThreshold = 5
	require.Contains(t, crossedThreshold(p, c), "mini_batch_error_threshold crossed: 6 mini-batches failed, more than the 5 allowed")
}

func TestParallelStepInvalidStepFailsAtOnce(t *testing.T) {
	env, in := parallelEnv(t, 50)
	env.OnActivity(parallel.RunMiniBatchName, mock.Anything, mock.Anything).Return(
		parallel.MiniBatchResult{}, temporal.NewNonRetryableApplicationError(
			"code \"/gone\" does not exist on this worker: restore it or fix the step's code: path", stepio.InvalidStepType, nil))
	env.ExecuteWorkflow(ParallelStepName, in)
	err := env.GetWorkflowError()
	require.Error(t, err)
	require.Contains(t, ErrorMessage(err), "code \"/gone\" does not exist on this worker", "thresholds of -1 do not hide a step that cannot run")
}
