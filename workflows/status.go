package workflows

import (
	"errors"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
)

// A workflow's own status in porch's words, in the PorchStatus search
// attribute of every run, step and trial workflow as it ends, so that
// `temporal workflow list --query 'PorchStatus="early_terminated"'` finds
// what Temporal's own status cannot say (an early-terminated trial is
// Canceled to Temporal). Skipped steps start no workflow; the steps query
// and porch job show list them. A reused step is a ReusedStep (PorchReused).
const (
	PorchSucceeded       = "succeeded"
	PorchFailed          = "failed"
	PorchCanceled        = "canceled"
	PorchEarlyTerminated = "early_terminated"
)

// statusChange is the GetVersion id of workflows setting PorchStatus as
// they end (version 1).
const statusChange = "porch-status"

// StatusRegisteredName is the local activity that says whether the server
// has PorchStatus registered (registered by the worker, which has a
// client): a server set up before porch had it must not fail the workflow
// task with an unknown search attribute.
const StatusRegisteredName = "PorchStatusRegistered"

// EarlyTerminatedSignal tells a trial, just before its sweep cancels it,
// that the early-termination policy stopped it.
const EarlyTerminatedSignal = "porch-early-terminated"

var keyStatus = temporal.NewSearchAttributeKeyKeyword(AttrStatus)

// withStatus runs a workflow and sets its PorchStatus as it ends (not when
// it continues as new).
func withStatus[In, Out any](wf func(workflow.Context, In) (Out, error)) func(workflow.Context, In) (Out, error) {
	return func(ctx workflow.Context, in In) (Out, error) {
		early := workflow.GetSignalChannel(ctx, EarlyTerminatedSignal)
		out, err := wf(ctx, in)
		var decided *StepBehaviour
		if b, ok := any(in).(behaved); ok {
			decided = b.behaviour()
		}
		setStatus(ctx, err, early, decided)
		return out, err
	}
}

// behaved is a step input that may carry its DAG's StepBehaviour.
type behaved interface{ behaviour() *StepBehaviour }

func (in CommandStepInput) behaviour() *StepBehaviour { return in.Behaviour }

// setStatus sets PorchStatus for how the workflow ended: as decided says,
// or when it is nil as statusChange and the server say.
func setStatus(ctx workflow.Context, err error, early workflow.ReceiveChannel, decided *StepBehaviour) {
	var next *workflow.ContinueAsNewError
	if errors.As(err, &next) || decided == nil && workflow.GetVersion(ctx, statusChange, workflow.DefaultVersion, 1) != 1 {
		return
	}
	status := PorchSucceeded
	switch {
	case err == nil:
	case isCanceled(err) && early.ReceiveAsync(nil):
		status = PorchEarlyTerminated
	case isCanceled(err):
		status = PorchCanceled
	default:
		status = PorchFailed
	}
	switch {
	case decided == nil:
		upsertStatus(ctx, status)
	case decided.PorchStatus:
		dctx, _ := workflow.NewDisconnectedContext(ctx)
		if err := workflow.UpsertTypedSearchAttributes(dctx, keyStatus.ValueSet(status)); err != nil {
			workflow.GetLogger(ctx).Warn("porch: cannot set PorchStatus", "error", err)
		}
	}
}

// porchStatusRegistered asks the server, in a local activity, whether it
// has PorchStatus (StatusRegisteredName); a failed question is a no.
func porchStatusRegistered(ctx workflow.Context) bool {
	lctx := workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{
		Summary:                "is PorchStatus registered",
		ScheduleToCloseTimeout: 30 * time.Second,
		RetryPolicy:            &temporal.RetryPolicy{MaximumAttempts: 2},
	})
	registered := false
	if err := workflow.ExecuteLocalActivity(lctx, StatusRegisteredName).Get(ctx, &registered); err != nil {
		return false
	}
	return registered
}

// upsertStatus sets PorchStatus, when the server has it registered.
func upsertStatus(ctx workflow.Context, status string) {
	dctx, _ := workflow.NewDisconnectedContext(ctx)
	if !porchStatusRegistered(dctx) {
		return
	}
	if err := workflow.UpsertTypedSearchAttributes(dctx, keyStatus.ValueSet(status)); err != nil {
		workflow.GetLogger(ctx).Warn("porch: cannot set PorchStatus", "error", err)
	}
}
