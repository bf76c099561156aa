package stepio

import (
	"context"
	"errors"
	"fmt"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"
)

// Stopped explains why ctx, an activity's context, has ended. The SDK
// ends it with a cause: the workflow's cancellation (the run was canceled,
// or a sibling step failed; its error is the context's, as before), a
// pause or reset from Temporal, the worker's shutdown, or a
// heartbeat that could not reach the server for longer than the SDK
// retries it, or that the server answered with "not found" because it
// had already timed the attempt out. The last two say that heartbeats to
// the server timed out, rather than a bare "context canceled". The error
// does not wrap the context's: the SDK reports an activity canceled from
// its context, not from the error, and a wrapped "context canceled" would
// be the innermost message, the one porch shows. nil when ctx has not
// ended.
func Stopped(ctx context.Context) error {
	err := ctx.Err()
	if err == nil {
		return nil
	}
	cause := context.Cause(ctx)
	var canceled *temporal.CanceledError
	var notFound *serviceerror.NotFound
	switch {
	case cause == nil || cause == err || errors.As(cause, &canceled):
		// A cancellation from the workflow must stay the context's error:
		// the SDK reports the activity canceled only for that.
		return err
	case errors.Is(cause, activity.ErrActivityPaused):
		return errors.New("the step's activity was paused from Temporal")
	case errors.Is(cause, activity.ErrActivityReset):
		return errors.New("the step's activity was reset from Temporal")
	case errors.Is(cause, worker.ErrWorkerShutdown):
		return errors.New("the worker running the step stopped")
	case errors.As(cause, &notFound):
		return fmt.Errorf("heartbeats to the temporal server timed out: the server no longer knows "+
			"this attempt (%s), as after its heartbeat timeout passed with no heartbeat reaching it (a starved or "+
			"unreachable server), or after the run ended or was reset; the attempt's processes were stopped", notFound.Message)
	}
	return fmt.Errorf("heartbeats to the temporal server timed out: this worker could not reach "+
		"the server (%v) for as long as a heartbeat may take, so the attempt's processes were stopped; a starved or "+
		"unreachable server does this", cause)
}
