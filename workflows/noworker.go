package workflows

import (
	"fmt"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/porch-pipelines/porch/compiler/plan"
)

// HasPollersName is the local activity of workflow workers that says
// whether a task queue (a string) has an activity poller, as the server
// lists them (seen in the last few minutes): a bool.
const HasPollersName = "HasPollers"

// noWorkerChange versions the watch for a worker: histories recorded
// before it have no timer or local activity while a command runs.
const noWorkerChange = "no-worker-details"

// noWorkerCheck is how long a command step's activity may wait before the
// step asks whether any worker polls its queue, and how often it asks
// again while none does.
const noWorkerCheck = time.Minute

// scheduledOn is a step's current details while its activity is
// scheduled on queue: the workflow does not learn when a worker takes
// it, so it says no more than that (the pending activity's state in the
// Temporal UI says whether it runs).
func scheduledOn(queue string) string {
	return "scheduled on task queue `" + queue + "`"
}

// hasPollers asks the server, in a local activity, whether a worker polls
// queue (HasPollersName).
func hasPollers(ctx workflow.Context, queue string) (bool, error) {
	lctx := workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{
		ScheduleToCloseTimeout: 10 * time.Second,
		RetryPolicy:            &temporal.RetryPolicy{MaximumAttempts: 1},
		Summary:                "is a worker polling " + queue + "?",
	})
	var polled bool
	err := workflow.ExecuteLocalActivity(lctx, HasPollersName, queue).Get(ctx, &polled)
	return polled, err
}

// runWatchingForWorker waits for fut, a command's activity (or a parallel
// step's planning) on queue, and
// while it waits a minute and more with no worker polling queue, says so
// in the step's current details (the Temporal UI's), with the command
// that starts one. Once a worker polls, it only waits: the step is taken,
// or will be when a worker has room. A step running longer than a minute costs one timer and
// one local activity. decided says the step's DAG decided it watches
// (StepBehaviour); otherwise the step asks noWorkerChange.
func runWatchingForWorker(ctx workflow.Context, fut workflow.Future, compute, queue string, decided bool) {
	if !decided && workflow.GetVersion(ctx, noWorkerChange, workflow.DefaultVersion, 1) != 1 {
		return
	}
	tctx, cancel := workflow.WithCancel(ctx)
	defer cancel()
	start := workflow.Now(ctx)
	for {
		fired := false
		workflow.NewSelector(ctx).
			AddFuture(fut, func(workflow.Future) {}).
			AddFuture(newTimer(tctx, noWorkerCheck, "check for a worker"), func(workflow.Future) { fired = true }).
			Select(ctx)
		if !fired || ctx.Err() != nil {
			return
		}
		if polled, err := hasPollers(ctx, queue); err != nil || polled {
			workflow.SetCurrentDetails(ctx, scheduledOn(queue))
			return
		}
		msg := fmt.Sprintf("waiting %s: %s", workflow.Now(ctx).Sub(start).Round(time.Second), plan.NoWorker(compute, queue, ""))
		workflow.GetLogger(ctx).Warn(msg)
		workflow.SetCurrentDetails(ctx, msg)
	}
}
