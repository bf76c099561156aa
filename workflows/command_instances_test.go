package workflows

import (
	"context"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	enums "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/porch-pipelines/porch/activities"
	"github.com/porch-pipelines/porch/activities/command"
	"github.com/porch-pipelines/porch/activities/parallel"
	"github.com/porch-pipelines/porch/activities/spread"
	"github.com/porch-pipelines/porch/activities/stepio"
	"github.com/porch-pipelines/porch/compiler/plan"
)

// spreadInput is a pytorch step of two instances on an instance type's
// queue.
func spreadInput() CommandStepInput {
	return CommandStepInput{Compute: "k", Run: command.RunCommandInput{Step: stepio.Step{RunID: "r", StepPath: "train", Command: plan.Command{
		Resources:    plan.Resources{InstanceCount: 2, TaskQueue: plan.InstanceTaskQueue("k", "t")},
		Distribution: &plan.Distribution{Type: "pytorch", ProcessCountPerInstance: 1},
	}}}}
}

// TestASpreadStepThatCannotHoldEveryInstanceLetsGoAndTriesAgain holds one
// of two instances on the first try (the other never comes), lets it go
// after holdPatience, holds both on the second try, and runs instance i on
// the node holding it, with instance 0's node as master.
func TestASpreadStepThatCannotHoldEveryInstanceLetsGoAndTriesAgain(t *testing.T) {
	var ts testsuite.WorkflowTestSuite
	env := ts.NewTestWorkflowEnvironment()
	Register(env)
	(&activities.Activities{}).Register(env)
	var mu sync.Mutex
	var holds []spread.HoldInstanceInput
	// The mocks end at once (a real hold runs until cancelled), so the
	// environment skips time; the signals are what holding reports.
	env.OnActivity(spread.HoldInstanceName, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in spread.HoldInstanceInput) error {
			mu.Lock()
			defer mu.Unlock()
			holds = append(holds, in)
			return nil
		})
	ready := func(slot, try int, node, addr string) func() {
		return func() {
			env.SignalWorkflow(spread.InstanceReadySignal, spread.InstanceReady{Slot: slot, Try: try, Node: node, Address: addr, Port: 29500 + try})
		}
	}
	env.RegisterDelayedCallback(ready(0, 0, "a", "10.0.0.1"), time.Second)
	env.RegisterDelayedCallback(ready(1, 1, "c", "10.0.0.3"), holdPatience+holdBackoff+time.Minute)
	env.RegisterDelayedCallback(ready(0, 1, "b", "10.0.0.2"), holdPatience+holdBackoff+2*time.Minute)
	type ran struct {
		queue    string
		instance command.InstanceAssignment
	}
	var runs []ran
	env.OnActivity(command.RunCommandName, mock.Anything, mock.Anything).Return(
		func(ctx context.Context, in command.RunCommandInput) (command.RunCommandResult, error) {
			mu.Lock()
			defer mu.Unlock()
			runs = append(runs, ran{activity.GetInfo(ctx).TaskQueue, *in.Instance})
			return command.RunCommandResult{WorkDir: activity.GetInfo(ctx).TaskQueue}, nil
		})

	env.ExecuteWorkflow(CommandStepName, spreadInput())
	require.NoError(t, env.GetWorkflowError())
	var res command.RunCommandResult
	require.NoError(t, env.GetWorkflowResult(&res))

	tries := map[int]int{}
	for _, h := range holds {
		tries[h.Try]++
	}
	assert.Equal(t, map[int]int{0: 2, 1: 2}, tries, "two holds a try, two tries")
	sort.Slice(runs, func(i, j int) bool { return runs[i].instance.Index < runs[j].instance.Index })
	master := func(i int) command.InstanceAssignment {
		return command.InstanceAssignment{Index: i, Count: 2, MasterAddr: "10.0.0.2", MasterPort: 29501}
	}
	assert.Equal(t, []ran{{plan.NodeTaskQueue("b"), master(0)}, {plan.NodeTaskQueue("c"), master(1)}}, runs)
	assert.Equal(t, plan.NodeTaskQueue("b"), res.WorkDir, "the step's result is instance 0's")
}

// TestASpreadStepFailsWithItsFirstFailingInstance fails instance 1: the
// step fails with its error.
func TestASpreadStepFailsWithItsFirstFailingInstance(t *testing.T) {
	var ts testsuite.WorkflowTestSuite
	env := ts.NewTestWorkflowEnvironment()
	Register(env)
	(&activities.Activities{}).Register(env)
	env.OnActivity(spread.HoldInstanceName, mock.Anything, mock.Anything).Return(nil)
	for slot, node := range []string{"a", "b"} {
		env.RegisterDelayedCallback(func() {
			env.SignalWorkflow(spread.InstanceReadySignal, spread.InstanceReady{Slot: slot, Node: node, Address: "h", Port: 1})
		}, time.Second)
	}
	env.OnActivity(command.RunCommandName, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in command.RunCommandInput) (command.RunCommandResult, error) {
			if in.Instance.Index == 1 {
				return command.RunCommandResult{}, temporal.NewNonRetryableApplicationError("rank 1 crashed", command.CommandFailedType, nil)
			}
			return command.RunCommandResult{}, nil
		})
	env.ExecuteWorkflow(CommandStepName, spreadInput())
	require.Error(t, env.GetWorkflowError())
	assert.Contains(t, env.GetWorkflowError().Error(), "rank 1 crashed")
}

// TestAParallelStepOnInstancesRunsPerInstanceOnEachNode runs 12
// mini-batches on two held instances with max_concurrency_per_instance 2:
// each node's queue gets mini-batches, never more than 2 at once; a
// mini-batch node b never started (schedule-to-start timeout) runs again.
func TestAParallelStepOnInstancesRunsPerInstanceOnEachNode(t *testing.T) {
	var ts testsuite.WorkflowTestSuite
	env := ts.NewTestWorkflowEnvironment()
	Register(env)
	(&activities.Activities{}).Register(env)
	ref := parallel.ParallelStepRef{RunID: "r", StepPath: "score", Datastore: "ws", Digest: "d"}
	env.OnActivity(parallel.PlanMiniBatchesName, mock.Anything, mock.Anything).Return(
		parallel.ParallelPlan{Ref: ref, Batches: 12, Items: 12, Instances: 2, PerInstance: 2}, nil)
	env.OnActivity(parallel.FinishParallelName, mock.Anything, mock.Anything).Return(parallel.FinishParallelResult{}, nil)
	env.OnActivity(parallel.ReportParallelProgressName, mock.Anything, mock.Anything).Return(nil).Maybe()
	env.OnActivity(parallel.MonitorResourcesName, mock.Anything, mock.Anything).Return(nil).Maybe()
	env.OnActivity(spread.HoldInstanceName, mock.Anything, mock.Anything).Return(nil)
	for slot, node := range []string{"a", "b"} {
		env.RegisterDelayedCallback(func() {
			env.SignalWorkflow(spread.InstanceReadySignal, spread.InstanceReady{Slot: slot, Node: node})
		}, time.Second)
	}
	var mu sync.Mutex
	running, most, done, sent := map[string]int{}, map[string]int{}, map[int]int{}, map[string]int{}
	lost := false
	env.OnActivity(parallel.RunMiniBatchName, mock.Anything, mock.Anything).Return(
		func(ctx context.Context, in parallel.MiniBatchInput) (parallel.MiniBatchResult, error) {
			q := activity.GetInfo(ctx).TaskQueue
			mu.Lock()
			sent[q]++
			if q == plan.NodeTaskQueue("b") && !lost {
				lost = true
				mu.Unlock()
				return parallel.MiniBatchResult{}, temporal.NewTimeoutError(enums.TIMEOUT_TYPE_SCHEDULE_TO_START, nil)
			}
			running[q]++
			most[q] = max(most[q], running[q])
			running[q]--
			done[in.Index]++
			mu.Unlock()
			return parallel.MiniBatchResult{Index: in.Index, Items: 1, Returned: 1, Node: q}, nil
		})
	in := ParallelStepInput{Plan: parallel.PlanMiniBatchesInput{RunID: "r", StepPath: "score", Parallel: plan.Parallel{
		MiniBatchErrorThreshold: 0, ErrorThreshold: -1, AllowedFailedPercent: 100,
		Retry:     plan.ParallelRetry{MaxRetries: 0, TimeoutSeconds: 60},
		Resources: plan.Resources{InstanceCount: 2, TaskQueue: plan.InstanceTaskQueue("k", "t")},
	}}}
	env.ExecuteWorkflow(ParallelStepName, in)
	require.NoError(t, env.GetWorkflowError())
	var res ParallelStepResult
	require.NoError(t, env.GetWorkflowResult(&res))
	assert.Equal(t, 12, res.Counters.Succeeded)
	assert.Equal(t, 0, res.Counters.Failed, "the lost mini-batch is not a failure")
	assert.True(t, lost)
	for i := range 12 {
		// A mini-batch moved off the lost node may have run there too
		// (the test environment reports it cancelled all the same); a
		// real one that finished leaves a done record, and runs no more.
		assert.Positive(t, done[i], "mini-batch %d ran", i)
	}
	assert.Len(t, sent, 2, "both nodes got mini-batches: %v", sent)
	for q, n := range most {
		assert.LessOrEqual(t, n, 2, "node queue %s ran at most max_concurrency_per_instance at once", q)
	}
}

// TestASpreadStepThatNeverHoldsEveryInstanceFailsSayingWhatFits holds only
// one of two instances on each of its tries: the step fails, saying so.
func TestASpreadStepThatNeverHoldsEveryInstanceFailsSayingWhatFits(t *testing.T) {
	var ts testsuite.WorkflowTestSuite
	env := ts.NewTestWorkflowEnvironment()
	Register(env)
	(&activities.Activities{}).Register(env)
	env.OnActivity(spread.HoldInstanceName, mock.Anything, mock.Anything).Return(nil)
	// Each try starts at most holdPatience+holdBackoff after the one
	// before holds its first instance.
	for try := range holdTries {
		env.RegisterDelayedCallback(func() {
			env.SignalWorkflow(spread.InstanceReadySignal, spread.InstanceReady{Slot: 0, Try: try, Node: "a"})
		}, time.Second+time.Duration(try)*(holdPatience+holdBackoff+10*time.Second))
	}
	env.ExecuteWorkflow(CommandStepName, spreadInput())
	err := env.GetWorkflowError()
	require.Error(t, err)
	assert.Contains(t, err.Error(), `the step's 2 instances must run at once, and the workers of task queue "porch-compute-k-t" held at most 1 of them in 3 tries`)
	assert.Contains(t, err.Error(), "lower instance_count to 1")
}
