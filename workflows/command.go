package workflows

import (
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/porch-pipelines/porch/activities/command"
	"github.com/porch-pipelines/porch/activities/stepio"
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
			NonRetryableErrorTypes: []string{command.CommandFailedType, command.CommandTimedOutType, stepio.InvalidStepType},
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
	default:
		workflow.SetCurrentDetails(ctx, scheduledOn(opts.TaskQueue))
		fut := workflow.ExecuteActivity(ctx, command.RunCommandName, in.Run)
		if in.Behaviour == nil || in.Behaviour.Watch {
			runWatchingForWorker(ctx, fut, in.Compute, opts.TaskQueue, in.Behaviour != nil)
		}
		err = fut.Get(ctx, &r)
	}
	workflow.SetCurrentDetails(ctx, commandEnded(r, err))
	return r, err
}
