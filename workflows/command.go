package workflows

import (
	"errors"
	"slices"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/porch-pipelines/porch/activities/command"
	"github.com/porch-pipelines/porch/activities/stepio"
	"github.com/porch-pipelines/porch/compiler/plan"
)

// Command step activity settings.
const (
	// noTimeout bounds a command without limits.timeout: Azure ML's own
	// ceiling for a job.
	noTimeout = 30 * 24 * time.Hour
	// heartbeatTimeout is how long a silent worker is trusted before the
	// step is retried elsewhere. The activity heartbeats every second.
	heartbeatTimeout = 30 * time.Second
	// infraAttempts is how often a step is tried when its worker is lost.
	// A command that exits non-zero is never retried.
	infraAttempts = 3
	// timeoutSlack lets the activity enforce limits.timeout itself (it
	// kills the process group and says so) before Temporal's timeout.
	timeoutSlack = time.Minute
)

// CommandStep is the workflow of one command step: it runs the command on
// the step's compute and returns where its outputs landed.
func CommandStep(ctx workflow.Context, in CommandStepInput) (_ command.RunCommandResult, err error) {
	defer func(ctx workflow.Context) { err = headline(ctx, in.Run.StepPath, err) }(ctx)
	placed, err := placeServerless(ctx, &in.Run.Command.Resources)
	if err != nil {
		return command.RunCommandResult{}, err
	}
	if placed != "" {
		in.Run.Notes = append(in.Run.Notes, placed)
	}
	limit := time.Duration(in.Run.Command.TimeoutSeconds) * time.Second
	opts := workflow.ActivityOptions{
		Summary:             commandSummary(in.Run.StepPath, in.Run.Command),
		TaskQueue:           in.Run.Command.Resources.Queue(in.Compute),
		StartToCloseTimeout: noTimeout,
		HeartbeatTimeout:    heartbeatTimeout,
		WaitForCancellation: true,
		RetryPolicy: &temporal.RetryPolicy{
			MaximumAttempts:        infraAttempts,
			NonRetryableErrorTypes: commandFinal,
		},
	}
	if limit > 0 {
		opts.StartToCloseTimeout = limit + timeoutSlack
	}
	ctx = workflow.WithActivityOptions(ctx, opts)
	var r command.RunCommandResult
	if in.Quota != nil {
		// Only a step that claims cores answers the quota query, so the
		// history of a step without a quota is unchanged.
		var st QuotaAdmission
		if err := setQuery(ctx, QuotaWaitQuery, func() (QuotaAdmission, error) { return st, nil }); err != nil {
			return r, err
		}
		release, err := admit(ctx, in.Quota, &st)
		if err != nil {
			return r, err
		}
		defer release()
	}
	switch {
	case in.Run.Command.Resources.Spot():
		// Only spot steps take this path, so other histories are unchanged.
		r, err = runSpotCommand(ctx, opts, in.Run)
	case spreads(ctx, in):
		r, err = runSpread(ctx, in, opts)
	case in.Behaviour != nil && in.Behaviour.Here && opts.TaskQueue == workflow.GetInfo(ctx).TaskQueueName:
		r, err = runHereFirst(ctx, opts, in)
	default:
		r, err = runScheduled(ctx, opts, in)
	}
	workflow.SetCurrentDetails(ctx, commandEnded(r, err))
	return r, err
}

// runScheduled runs the step's command as an activity on its queue.
func runScheduled(ctx workflow.Context, opts workflow.ActivityOptions, in CommandStepInput) (command.RunCommandResult, error) {
	workflow.SetCurrentDetails(ctx, scheduledOn(opts.TaskQueue))
	fut := workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, opts), command.RunCommandName, in.Run)
	if in.Behaviour == nil || in.Behaviour.Watch {
		runWatchingForWorker(ctx, fut, in.Compute, opts.TaskQueue, in.Behaviour != nil)
	}
	var r command.RunCommandResult
	err := fut.Get(ctx, &r)
	return r, err
}

// hereTimeout bounds a command's local activity: its budget
// (command.hereBudget, 2 s), and the time a stopped command takes to end.
const hereTimeout = time.Minute

// runHereFirst runs a step whose queue is its workflow's own in a local
// activity of this workflow, on the worker that runs this task (see
// activities/command/here.go). A command that outlasts the local
// activity's budget moves, and an activity on that worker's own queue
// follows it to its end. A worker that runs no steps declines, and the
// step is scheduled as before. A local run or a follow that was lost (a
// timeout, the worker gone) counts as an attempt, and the step runs
// again as a scheduled activity.
func runHereFirst(ctx workflow.Context, opts workflow.ActivityOptions, in CommandStepInput) (command.RunCommandResult, error) {
	lctx := workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{
		Summary:             opts.Summary,
		StartToCloseTimeout: hereTimeout,
		RetryPolicy:         &temporal.RetryPolicy{MaximumAttempts: 1},
	})
	var r command.RunCommandResult
	err := workflow.ExecuteLocalActivity(lctx, command.RunCommandName, in.Run).Get(ctx, &r)
	if err == nil && r.Moved != nil {
		follow := in.Run
		follow.Follow = r.Moved.Key
		fopts := opts
		fopts.TaskQueue = plan.NodeTaskQueue(r.Moved.Node)
		// The command runs on that worker only: a worker gone is not
		// waited for longer than a silent one.
		fopts.ScheduleToStartTimeout = heartbeatTimeout
		fopts.RetryPolicy = &temporal.RetryPolicy{MaximumAttempts: 1}
		workflow.SetCurrentDetails(ctx, "running on worker `"+r.Moved.Node+"`")
		r = command.RunCommandResult{}
		err = workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, fopts), command.RunCommandName, follow).Get(ctx, &r)
	}
	switch {
	case err == nil && r.Declined == "":
		return r, nil
	case err != nil && (ctx.Err() != nil || final(err)):
		return r, err
	case err != nil:
		// The attempt was lost; the step's other attempts are scheduled.
		in.Run.PriorAttempts++
		retry := *opts.RetryPolicy
		retry.MaximumAttempts--
		opts.RetryPolicy = &retry
		workflow.GetLogger(ctx).Warn("porch: the step's command is scheduled again", "error", err)
	}
	return runScheduled(ctx, opts, in)
}

// final says a command's error ends the step: the command failed, or
// the step cannot run, or it was cancelled.
func final(err error) bool {
	var ce *temporal.CanceledError
	if errors.As(err, &ce) {
		return true
	}
	var ae *temporal.ApplicationError
	if !errors.As(err, &ae) {
		return false
	}
	return ae.NonRetryable() || slices.Contains(commandFinal, ae.Type())
}

// commandFinal are the error types a command step never retries.
var commandFinal = []string{command.CommandFailedType, command.CommandTimedOutType, stepio.InvalidStepType}
