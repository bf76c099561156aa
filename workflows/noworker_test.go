package workflows

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	sdkpb "go.temporal.io/api/sdk/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/testsuite"

	"github.com/porch-pipelines/porch/activities"
	"github.com/porch-pipelines/porch/activities/command"
	"github.com/porch-pipelines/porch/activities/parallel"
	"github.com/porch-pipelines/porch/activities/stepio"
	"github.com/porch-pipelines/porch/compiler/plan"
)

// TestCommandStepSaysWhenNoWorkerPollsItsQueue: a command that waits
// minutes on a queue no worker polls says so in its current details every
// minute, with the worker to start (in backticks: the UI renders markdown);
// once one polls, the details say where it is scheduled again and the step
// stops asking.
//
// A step its DAG decided for (StepBehaviour) watches only when told to,
// and without version markers; one told that a worker polls asks nothing.
func TestCommandStepSaysWhenNoWorkerPollsItsQueue(t *testing.T) {
	for _, c := range []struct {
		name      string
		behaviour *StepBehaviour
		watches   bool
	}{
		{"asks its version", nil, true},
		{"told to watch", &StepBehaviour{Watch: true}, true},
		{"told a worker polls", &StepBehaviour{}, false},
	} {
		t.Run(c.name, func(t *testing.T) { commandStepWatches(t, c.behaviour, c.watches) })
	}
}

func commandStepWatches(t *testing.T, behaviour *StepBehaviour, watches bool) {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	Register(env)
	(&activities.Activities{}).Register(env)
	var asked []time.Duration
	var start time.Time
	env.RegisterActivityWithOptions(func(ctx context.Context, queue string) (bool, error) {
		asked = append(asked, env.Now().Sub(start))
		assert.Equal(t, "porch-compute-cpu-cluster", queue)
		return len(asked) > 2, nil
	}, activity.RegisterOptions{Name: HasPollersName})
	env.OnActivity(command.RunCommandName, mock.Anything, mock.Anything).After(4*time.Minute+30*time.Second).
		Return(command.RunCommandResult{}, nil)
	var details []string
	for _, at := range []time.Duration{30 * time.Second, 90 * time.Second, 150 * time.Second, 210 * time.Second} {
		env.RegisterDelayedCallback(func() {
			v, err := env.QueryWorkflow("__temporal_workflow_metadata")
			require.NoError(t, err)
			var md sdkpb.WorkflowMetadata
			require.NoError(t, v.Get(&md))
			details = append(details, md.GetCurrentDetails())
		}, at)
	}
	start = env.Now()
	env.ExecuteWorkflow(CommandStep, CommandStepInput{Compute: "cpu-cluster", Behaviour: behaviour,
		Run: command.RunCommandInput{Step: stepio.Step{RunID: "r", StepPath: "train"}}})
	require.True(t, env.IsWorkflowCompleted())
	require.NoError(t, env.GetWorkflowError())
	if !watches {
		assert.Empty(t, asked, "a step told that a worker polls its queue asks nothing")
		assert.Equal(t, []string{"scheduled on task queue `porch-compute-cpu-cluster`", "scheduled on task queue `porch-compute-cpu-cluster`",
			"scheduled on task queue `porch-compute-cpu-cluster`", "scheduled on task queue `porch-compute-cpu-cluster`"}, details)
		return
	}
	assert.Equal(t, []time.Duration{time.Minute, 2 * time.Minute, 3 * time.Minute}, asked)
	want := `: no worker serves compute "cpu-cluster" (task queue "porch-compute-cpu-cluster"): start one with ` + "`porch worker --compute cpu-cluster`"
	// Before the first check it says where the step is scheduled, not that
	// it runs: no worker may have taken it.
	assert.Equal(t, []string{"scheduled on task queue `porch-compute-cpu-cluster`", "waiting 1m0s" + want, "waiting 2m0s" + want,
		"scheduled on task queue `porch-compute-cpu-cluster`"}, details)
}

// TestParallelStepSaysWhenNoWorkerPlansIt: a parallel step whose planning
// waits on a queue no worker polls says so in its current details too.
func TestParallelStepSaysWhenNoWorkerPlansIt(t *testing.T) {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	Register(env)
	(&activities.Activities{}).Register(env)
	env.RegisterActivityWithOptions(func(ctx context.Context, queue string) (bool, error) {
		assert.Equal(t, "porch-compute-gpu", queue)
		return false, nil
	}, activity.RegisterOptions{Name: HasPollersName})
	ref := parallel.ParallelStepRef{RunID: "r", StepPath: "score", Datastore: "ws", Digest: "d"}
	env.OnActivity(parallel.PlanMiniBatchesName, mock.Anything, mock.Anything).After(90*time.Second).Return(
		parallel.ParallelPlan{Ref: ref, Batches: 0, Instances: 1, PerInstance: 1}, nil)
	env.OnActivity(parallel.FinishParallelName, mock.Anything, mock.Anything).Return(parallel.FinishParallelResult{}, nil)
	var details string
	env.RegisterDelayedCallback(func() {
		v, err := env.QueryWorkflow("__temporal_workflow_metadata")
		require.NoError(t, err)
		var md sdkpb.WorkflowMetadata
		require.NoError(t, v.Get(&md))
		details = md.GetCurrentDetails()
	}, 75*time.Second)
	env.ExecuteWorkflow(ParallelStep, ParallelStepInput{Compute: "gpu", Plan: parallel.PlanMiniBatchesInput{RunID: "r", StepPath: "score",
		Parallel: plan.Parallel{Retry: plan.ParallelRetry{TimeoutSeconds: 60}, AllowedFailedPercent: 100}}})
	require.True(t, env.IsWorkflowCompleted())
	require.NoError(t, env.GetWorkflowError())
	assert.Equal(t, `waiting 1m0s: no worker serves compute "gpu" (task queue "porch-compute-gpu"): start one with `+"`porch worker --compute gpu`", details)
}
