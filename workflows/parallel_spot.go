package workflows

import (
	"slices"

	"go.temporal.io/sdk/workflow"

	"github.com/porch-pipelines/porch/compiler/plan"
)

// heartbeatTimeoutType makes a lost heartbeat non-retryable in a retry
// policy (Temporal's name for the timeout), so that a preempted spot
// mini-batch comes back to the workflow, which counts it.
const heartbeatTimeoutType = "TemporalTimeout:Heartbeat"

// A spot parallel step counts preemptions per mini-batch, as a spot
// command step does for its one process: a mini-batch whose worker stops
// heartbeating runs again, on preemptible workers until it was preempted
// spotPreemptions times, then on dedicated ones. Per mini-batch, because
// one lost worker takes every mini-batch it ran: counting per step would
// move the whole step at its first preemption.

// queue is the task queue of the step's own activities (planning,
// progress, finishing): the spot variant for a spot step. Those are short
// and retried; only mini-batches move to dedicated workers.
func (r *parallelRun) queue() string {
	q := r.in.Plan.Parallel.Resources.Queue(r.in.Compute)
	if r.in.Plan.Parallel.Resources.Spot() {
		return plan.SpotTaskQueue(q)
	}
	return q
}

// spotBatch puts mini-batch i of a spot step on the spot queue while it
// has been preempted fewer than spotPreemptions times, with the spot
// heartbeat timeout, and says whether it did.
func (r *parallelRun) spotBatch(ctx workflow.Context, i int) (workflow.Context, bool) {
	if !r.in.Plan.Parallel.Resources.Spot() || r.st.Spot.preemptions(i) >= spotPreemptions {
		return ctx, false
	}
	opts := workflow.GetActivityOptions(ctx)
	opts.TaskQueue = r.queue()
	opts.HeartbeatTimeout = min(opts.HeartbeatTimeout, spotHeartbeatTimeout)
	heartbeatComesBack(&opts)
	return workflow.WithActivityOptions(ctx, opts), true
}

// heartbeatComesBack makes a lost heartbeat end the activity rather than
// be retried on the same queue, so that the workflow decides where it
// runs next (a preempted spot worker, a lost node). It copies the retry
// policy, which the options may share.
func heartbeatComesBack(opts *workflow.ActivityOptions) {
	policy := *opts.RetryPolicy
	policy.NonRetryableErrorTypes = append(append([]string(nil), policy.NonRetryableErrorTypes...), heartbeatTimeoutType)
	opts.RetryPolicy = &policy
}

// preempted says whether mini-batch i, run on a spot worker, ended with
// its worker lost; it is then queued to run again, counted.
func (r *parallelRun) preempted(ctx workflow.Context, f workflow.Future, i int) bool {
	if !isPreemption(f.Get(ctx, nil)) {
		return false
	}
	s := &r.st.Spot
	s.Preemptions++
	n := s.preemptions(i) + 1
	s.Batches = setCount(s.Batches, i, n)
	if n == spotPreemptions {
		s.Moved++
		workflow.GetLogger(ctx).Info("porch: mini-batch "+MovedToDedicated(n), "mini_batch", i)
	}
	r.st.Preempted = append(r.st.Preempted, i)
	return true
}

// forget drops the count of mini-batch i, which ended.
func (s *ParallelSpot) forget(i int) { s.Batches = dropCount(s.Batches, i) }

// nextPreempted takes a preempted mini-batch to run again.
func (r *parallelRun) nextPreempted() (int, bool) {
	if len(r.st.Preempted) == 0 {
		return 0, false
	}
	i := r.st.Preempted[0]
	r.st.Preempted = r.st.Preempted[1:]
	return i, true
}

// ParallelSpot is a spot parallel step's preemptions: in all, and of the
// mini-batches still counted (those preempted at least once).
type ParallelSpot struct {
	Preemptions int          `json:"preemptions,omitempty"`
	Moved       int          `json:"moved,omitempty"`
	Batches     []BatchCount `json:"batches,omitempty"`
}

// BatchCount is how often something happened to one mini-batch (it was
// preempted, or lost its worker).
type BatchCount struct {
	Index int `json:"index"`
	Count int `json:"count"`
}

func (s ParallelSpot) preemptions(i int) int { return countOf(s.Batches, i) }

// countOf is mini-batch i's count in bs, 0 when it has none.
func countOf(bs []BatchCount, i int) int {
	for _, b := range bs {
		if b.Index == i {
			return b.Count
		}
	}
	return 0
}

// dropCount removes mini-batch i's count from bs.
func dropCount(bs []BatchCount, i int) []BatchCount {
	return slices.DeleteFunc(bs, func(b BatchCount) bool { return b.Index == i })
}

// setCount sets mini-batch i's count in bs.
func setCount(bs []BatchCount, i, n int) []BatchCount {
	for k := range bs {
		if bs[k].Index == i {
			bs[k].Count = n
			return bs
		}
	}
	return append(bs, BatchCount{Index: i, Count: n})
}

// spotState is the step's SpotState for porch run's progress.
func (s ParallelSpot) spotState() SpotState {
	return SpotState{Preemptions: s.Preemptions, Dedicated: s.Moved > 0, Moved: s.Moved}
}
