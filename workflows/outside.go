package workflows

import (
	"errors"
	"fmt"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
)

// outsideChange is the GetVersion id of steps ended from outside porch: a
// step workflow cancelled or terminated by a Temporal client (the web UI,
// `temporal workflow cancel|terminate`) while its run neither failed nor
// was cancelled. Version 1 fails the step and so the run, naming the step
// and who ended it; DefaultVersion let a cancelled step end the run
// Completed, its dependants skipped.
const outsideChange = "step-ended-outside"

// StepEndedOutsideType is the application error type of a step that a
// Temporal client cancelled or terminated.
const StepEndedOutsideType = "StepEndedOutside"

// DescribeStepEndName is the local activity that reads, from a step
// workflow's history, who cancelled or terminated it (registered by the
// worker, which has a client).
const DescribeStepEndName = "DescribeStepEnd"

// StepEnd is how a step workflow was ended from outside.
type StepEnd struct {
	// Kind is "canceled" or "terminated".
	Kind string `json:"kind"`
	// Identity is the client that asked (the UI's, the CLI's user@host).
	Identity string `json:"identity,omitempty"`
	// Reason is the reason given to terminate.
	Reason string `json:"reason,omitempty"`
}

// endedOutside says whether err is a step workflow's end that porch did
// not cause: a cancellation while the run did not cancel its steps, or a
// termination.
func endedOutside(err error, stepsCanceled bool) bool {
	var te *temporal.TerminatedError
	if errors.As(err, &te) {
		return true
	}
	return isCanceled(err) && !stepsCanceled
}

// outsideEnd is the error of a step a Temporal client ended: it names the
// step, how it ended and who did it (read from the step's history; when
// that cannot be read the message says so, still failing the step).
func (d *dag) outsideEnd(ctx workflow.Context, n *node, err error) error {
	end := StepEnd{Kind: "canceled"}
	var te *temporal.TerminatedError
	if errors.As(err, &te) {
		end.Kind = "terminated"
	}
	lctx := workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{
		Summary:                "who ended step " + n.step.Path,
		ScheduleToCloseTimeout: time.Minute,
		RetryPolicy:            &temporal.RetryPolicy{MaximumAttempts: 3},
	})
	var read StepEnd
	if workflow.ExecuteLocalActivity(lctx, DescribeStepEndName, n.state.WorkflowID).Get(ctx, &read) == nil && read.Kind != "" {
		end = read
	}
	who := "a Temporal client"
	if end.Identity != "" {
		who = end.Identity
	}
	msg := fmt.Sprintf("step %q was %s from outside porch by %s", n.step.Path, end.Kind, who)
	if end.Reason != "" {
		msg += ": " + end.Reason
	}
	n.state.Error = msg
	if end.Kind == "terminated" {
		n.state.Status = StatusFailed
	}
	// Not wrapping err: a cancellation as cause would read as the run's own.
	return temporal.NewNonRetryableApplicationError(msg, StepEndedOutsideType, nil)
}
