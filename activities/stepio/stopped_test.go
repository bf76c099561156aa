package stepio

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"
)

// TestStoppedNamesTheCause explains an activity context ended with each
// cause the SDK gives: a heartbeat that could not reach the server says
// heartbeats timed out.
func TestStoppedNamesTheCause(t *testing.T) {
	for cause, want := range map[error]string{
		serviceerror.NewUnavailable("connection refused"):      "heartbeats to the temporal server timed out: this worker could not reach the server (connection refused)",
		serviceerror.NewNotFound("activity already timed out"): "heartbeats to the temporal server timed out: the server no longer knows this attempt (activity already timed out)",
		temporal.NewCanceledError():                            "context canceled",
		activity.ErrActivityPaused:                             "paused from Temporal",
		activity.ErrActivityReset:                              "reset from Temporal",
		worker.ErrWorkerShutdown:                               "the worker running the step stopped",
		context.Canceled:                                       "context canceled",
	} {
		ctx, cancel := context.WithCancelCause(context.Background())
		cancel(cause)
		assert.ErrorContains(t, Stopped(ctx), want, "cause %v", cause)
	}
	assert.NoError(t, Stopped(context.Background()))
}
