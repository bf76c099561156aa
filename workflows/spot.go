package workflows

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	enums "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/porch-pipelines/porch/activities/command"
	"github.com/porch-pipelines/porch/compiler/plan"
)

// Spot steps (queue_settings.job_tier: spot, or a low_priority compute).
const (
	// spotPreemptions is how often a spot step is preempted before it
	// moves to dedicated workers.
	spotPreemptions = 3
	// spotHeartbeatTimeout is how soon a lost preemptible worker is
	// noticed: a reclaimed spot VM is routine, not an accident, and the
	// step should be back in the queue well before a dedicated worker's
	// 30 s. Activities heartbeat every second.
	spotHeartbeatTimeout = 10 * time.Second
)

// SpotQuery is the query a spot step's workflow answers with its SpotState.
const SpotQuery = "spot"

// SpotState is where a spot step stands: how often it was preempted, and
// whether it moved to dedicated workers.
type SpotState struct {
	Preemptions int  `json:"preemptions"`
	Dedicated   bool `json:"dedicated,omitempty"`
	// Moved is, for a parallel step, how many mini-batches moved.
	Moved int `json:"moved,omitempty"`
}

// Summary is the state in a few words for porch run's progress, "" before
// the first preemption.
func (s SpotState) Summary() string {
	switch {
	case s.Moved > 0:
		return plural(int64(s.Moved), "mini-batch", "mini-batches") + " " + MovedToDedicated(spotPreemptions)
	case s.Dedicated:
		return MovedToDedicated(s.Preemptions)
	case s.Preemptions > 0:
		return fmt.Sprintf("preempted %d times on spot workers", s.Preemptions)
	}
	return ""
}

// MovedToDedicated is what the step log and progress say when a spot step
// leaves preemptible workers.
func MovedToDedicated(n int) string {
	return fmt.Sprintf("preempted %d times: moving to dedicated workers", n)
}

// spotRun runs one attempt of a spot step's activity with the options
// given, the attempts made before it and notes for the step log.
type spotRun func(ctx workflow.Context, prior int32, notes []string) error

// runSpot runs a spot step's activity on the preemptible workers of
// opts.TaskQueue (its spot queue), one attempt at a time so that the
// workflow itself counts preemptions: an attempt that stops heartbeating
// is one. Other infrastructure failures use up the step's usual retry
// budget; a failure of the step's own is final. After spotPreemptions the
// step runs on the dedicated workers of opts.TaskQueue, with opts' retries.
func runSpot(ctx workflow.Context, opts workflow.ActivityOptions, run spotRun) error {
	var st SpotState
	if err := setQuery(ctx, SpotQuery, func() (SpotState, error) { return st, nil }); err != nil {
		return err
	}
	spot := opts
	spot.TaskQueue = plan.SpotTaskQueue(opts.TaskQueue)
	spot.HeartbeatTimeout = spotHeartbeatTimeout
	spot.Summary = oneLine("spot: "+opts.Summary, maxSummary)
	policy := *opts.RetryPolicy
	policy.MaximumAttempts = 1
	spot.RetryPolicy = &policy
	sctx := workflow.WithActivityOptions(ctx, spot)
	attempts, failures := int32(0), int32(0)
	for st.Preemptions < spotPreemptions {
		note := "porch: spot step: running on a preemptible worker"
		if st.Preemptions > 0 {
			note = fmt.Sprintf("porch: spot step: preempted %d of %d times, running on a preemptible worker again", st.Preemptions, spotPreemptions)
		}
		workflow.SetCurrentDetails(ctx, strings.TrimPrefix(note, "porch: spot step: "))
		err := run(sctx, attempts, []string{note})
		attempts++
		switch {
		case err == nil:
			return nil
		case isPreemption(err):
			st.Preemptions++
			workflow.GetLogger(ctx).Info("porch: spot step preempted", "preemptions", st.Preemptions)
		case retryable(err, opts.RetryPolicy.NonRetryableErrorTypes) && failures+1 < opts.RetryPolicy.MaximumAttempts:
			failures++
		default:
			return err
		}
	}
	st.Dedicated = true
	workflow.GetLogger(ctx).Info("porch: " + MovedToDedicated(st.Preemptions))
	workflow.SetCurrentDetails(ctx, MovedToDedicated(st.Preemptions))
	return run(workflow.WithActivityOptions(ctx, opts), attempts, []string{"porch: " + MovedToDedicated(st.Preemptions)})
}

// isPreemption says whether an activity failed because its worker stopped
// heartbeating: the worker was lost.
func isPreemption(err error) bool {
	var te *temporal.TimeoutError
	return errors.As(err, &te) && te.TimeoutType() == enums.TIMEOUT_TYPE_HEARTBEAT
}

// retryable says whether Temporal would retry err under a retry policy
// with these non-retryable types: not a cancellation, not a failure the
// step caused.
func retryable(err error, nonRetryable []string) bool {
	var canceled *temporal.CanceledError
	if errors.As(err, &canceled) {
		return false
	}
	var app *temporal.ApplicationError
	if errors.As(err, &app) {
		return !app.NonRetryable() && !slices.Contains(nonRetryable, app.Type())
	}
	return true
}

// runSpotCommand runs a spot command step's RunCommand with runSpot.
func runSpotCommand(ctx workflow.Context, opts workflow.ActivityOptions, in command.RunCommandInput) (command.RunCommandResult, error) {
	var r command.RunCommandResult
	err := runSpot(ctx, opts, func(actx workflow.Context, prior int32, notes []string) error {
		run := in
		run.PriorAttempts, run.Notes = prior, append(slices.Clip(in.Notes), notes...)
		return workflow.ExecuteActivity(actx, command.RunCommandName, run).Get(actx, &r)
	})
	return r, err
}
