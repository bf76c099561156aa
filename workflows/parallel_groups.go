package workflows

import (
	"fmt"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/porch-pipelines/porch/activities/parallel"
)

// groupsChange is the GetVersion id of grouped mini-batches: from version
// 1 a step whose mini-batches are short runs several to a RunMiniBatches
// activity, as many as run() goes through in about groupTarget, where
// DefaultVersion ran one to a RunMiniBatch activity. Each activity costs
// the server four writes and the workflow a task, a few milliseconds of
// CPU that compete with run() for the cores: at 50 ms a mini-batch, 15%
// of a 2-core machine's throughput.
const groupsChange = "parallel-groups"

const (
	// groupTarget is how long a group of mini-batches runs.
	groupTarget = 3 * time.Second
	// maxGroup caps the mini-batches of one group.
	maxGroup = 100
)

// nextBatch is what the next mini-batch activity runs: one mini-batch, or
// with groups as many as groupSize says. A mini-batch running again (after
// a failed attempt, or a group that ended early) runs on its own, with
// Temporal's retries.
func (r *parallelRun) nextBatch(ctx workflow.Context, window int) ([]int, bool) {
	st := r.st
	again := len(st.Requeued) > 0 || len(st.Preempted) > 0
	i, ok := r.nextIndex(ctx)
	if !ok {
		return nil, false
	}
	batch := []int{i}
	if again {
		return batch, true
	}
	for n := r.groupSize(window); len(batch) < n; {
		j, ok := r.nextIndex(ctx)
		if !ok {
			break
		}
		batch = append(batch, j)
	}
	return batch, true
}

// groupSize is how many mini-batches the next activity runs: 1 until one
// has run, then as many as run() went through in groupTarget on average,
// at most maxGroup, and fewer near the end, so that the last groups end
// together rather than one process working on while the others idle.
func (r *parallelRun) groupSize(window int) int {
	st := r.st
	if !r.grouped || st.Ran == 0 {
		return 1
	}
	n := int(groupTarget.Milliseconds() * int64(st.Ran) / max(st.RanMs, 1))
	// The mini-batches not started yet (for a resumed step, an upper
	// bound: those past the listed page include finished ones).
	left := st.Plan.Batches - st.Next + len(st.Pending) + len(st.Requeued)
	return max(1, min(n, maxGroup, left/(2*window)))
}

// groupOptions are a RunMiniBatches activity's options: a mini-batch's,
// with the time of them all, and no retries: when the group ends early its
// mini-batches run again on their own.
func (r *parallelRun) groupOptions(ctx workflow.Context, batch []int) workflow.Context {
	opts := workflow.GetActivityOptions(r.batchOptions(ctx, batch[0]))
	opts.Summary = groupSummary(batch, r.st.Plan)
	opts.StartToCloseTimeout = time.Duration(len(batch))*(opts.StartToCloseTimeout-batchSlack) + batchSlack
	opts.RetryPolicy = &temporal.RetryPolicy{MaximumAttempts: 1}
	return workflow.WithActivityOptions(ctx, opts)
}

// retried counts the attempts mini-batch i used in an earlier activity
// against its retry policy.
func (r *parallelRun) retried(ctx workflow.Context, i int) workflow.Context {
	prior := r.st.lostAttempts(i)
	if prior == 0 {
		return ctx
	}
	opts := workflow.GetActivityOptions(ctx)
	policy := *opts.RetryPolicy
	policy.MaximumAttempts = max(policy.MaximumAttempts-prior, 1)
	opts.RetryPolicy = &policy
	return workflow.WithActivityOptions(ctx, opts)
}

// groupEnded records a RunMiniBatches activity's end. A mini-batch whose
// attempt failed runs again on its own while retry_settings allows, and
// otherwise counts as failed. A group that ended early (its worker lost,
// a datastore error) has its mini-batches run again on their own: those
// it finished are skipped, and no attempt is counted against the others.
// It returns the step's failure when a mini-batch makes the step fail.
func (r *parallelRun) groupEnded(ctx workflow.Context, f workflow.Future, batch []int) error {
	st := r.st
	var res parallel.MiniBatchesResult
	err := f.Get(ctx, &res)
	if err == nil {
		for _, ok := range res.Succeeded {
			r.succeeded(ctx, ok)
		}
		for _, bad := range res.Failed {
			i, attempt := bad.Failure.Index, bad.Failure.Attempt
			if attempt < int32(r.in.Plan.Parallel.Retry.MaxRetries+1) {
				st.Lost = setCount(st.Lost, i, int(attempt))
				st.Requeued = append(st.Requeued, i)
				continue
			}
			if err := r.failed(ctx, temporal.NewApplicationError(bad.Message, parallel.MiniBatchFailedType, bad.Failure)); err != nil {
				return err
			}
		}
		return nil
	}
	if isCanceled(err) {
		return nil
	}
	if err := r.fatal(err); err != nil {
		return err
	}
	workflow.GetLogger(ctx).Info(fmt.Sprintf("porch: %s ended early (%s): they run again one by one", groupSummary(batch, st.Plan), ErrorMessage(err)))
	st.Requeued = append(st.Requeued, batch...)
	return nil
}
