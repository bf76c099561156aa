package workflows

import (
	"errors"
	"fmt"
	"strings"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/porch-pipelines/porch/activities/command"
)

// StepErrorType is the application error type a failed step workflow ends
// with: its message is the headline Temporal's UI and CLI show for the
// workflow, and its cause the error as it came.
const StepErrorType = "StepError"

// headlineChange is the GetVersion id of failed step workflows ending
// with a headline naming the step and the cause (version 1), where
// DefaultVersion ended with the activity's error, headed "activity error".
const headlineChange = "step-error-headline"

// headlineTail is how many of the last stderr lines the headline carries.
const headlineTail = 5

// headline is a failed step workflow's error: `step "train" failed:
// command exited with code 3`, then the last lines of its stderr. A
// cancellation, a continue-as-new and success pass unchanged.
func headline(ctx workflow.Context, path string, err error) error {
	var next *workflow.ContinueAsNewError
	if err == nil || isCanceled(err) || errors.As(err, &next) {
		return err
	}
	if workflow.GetVersion(ctx, headlineChange, workflow.DefaultVersion, 1) != 1 {
		return err
	}
	cause, _, _ := strings.Cut(ErrorMessage(err), "\n")
	msg := fmt.Sprintf("step %q failed: %s", path, cause)
	if tail := stderrTail(err); len(tail) > 0 {
		msg += "\n" + strings.Join(tail[max(len(tail)-headlineTail, 0):], "\n")
	}
	return temporal.NewNonRetryableApplicationError(msg, StepErrorType, err)
}

// stderrTail is the stderr tail a failed command's error carries, if any.
func stderrTail(err error) []string {
	for e := err; e != nil; e = errors.Unwrap(e) {
		var f command.CommandFailure
		if ae, ok := e.(*temporal.ApplicationError); ok && ae.HasDetails() && ae.Details(&f) == nil && len(f.StderrTail) > 0 {
			return f.StderrTail
		}
	}
	return nil
}
