package workflows

import (
	"fmt"
	"time"

	"go.temporal.io/sdk/workflow"
)

// failoverChange is the GetVersion id of a parallel step's recovery from
// a lost worker. Version 1: a mini-batch on a held node's queue whose
// worker stops heartbeating comes back to the workflow (rather than being
// retried on the dead node's queue, where it waited out nodeStartTimeout)
// and runs again on another instance at once, its attempts counted; the
// node takes no more mini-batches until it is held again; and
// FinishParallel has the step's heartbeat timeout rather than 5 minutes.
const failoverChange = "parallel-failover"

// failover says whether this run recovers from lost workers as version 1
// of failoverChange does. The answer is the same for every call of one
// workflow run.
func (r *parallelRun) failover(ctx workflow.Context) bool {
	if r.failoverVersion == nil {
		v := workflow.GetVersion(ctx, failoverChange, workflow.DefaultVersion, 1) == 1
		r.failoverVersion = &v
	}
	return *r.failoverVersion
}

// finishHeartbeat is FinishParallel's heartbeat timeout: the step's own
// from version 1 of failoverChange on.
func (r *parallelRun) finishHeartbeat(ctx workflow.Context) time.Duration {
	if r.failover(ctx) {
		return r.heartbeat()
	}
	return 5 * time.Minute
}

// nodeBatch gives mini-batch i, sent to a held node's queue, its attempts
// so far: a lost heartbeat comes back to the workflow, and the retries
// left are those the mini-batch has not used on lost nodes.
func (r *parallelRun) nodeBatch(ctx workflow.Context, i int) workflow.Context {
	opts := workflow.GetActivityOptions(ctx)
	heartbeatComesBack(&opts)
	return r.retried(workflow.WithActivityOptions(ctx, opts), i)
}

// lostWorker says whether mini-batch i ended because the worker running
// it stopped heartbeating with attempts left; it is then counted and
// queued to run again on another instance. Its last attempt's loss is
// the mini-batch's failure, as Temporal's own retries would have it.
func (r *parallelRun) lostWorker(ctx workflow.Context, f workflow.Future, i int, node string) bool {
	err := f.Get(ctx, nil)
	if !isPreemption(err) {
		return false
	}
	// The attempts so far: the last heartbeat says which attempt was
	// lost (a worker lost before its first heartbeat used one more).
	used := max(batchFailure(err).Attempt, r.st.lostAttempts(i)+1)
	if used >= int32(r.in.Plan.Parallel.Retry.MaxRetries+1) {
		return false
	}
	r.st.Lost = setCount(r.st.Lost, i, int(used))
	r.st.Requeued = append(r.st.Requeued, i)
	workflow.GetLogger(ctx).Info(fmt.Sprintf("porch: mini-batch %d lost its worker %s (no heartbeat within %s): it runs again on another instance", i, node, r.heartbeat()),
		"mini_batch", i, "node", node, "attempt", used)
	return true
}

// lostAttempts is how many attempts mini-batch i lost with its worker.
func (st *ParallelState) lostAttempts(i int) int32 { return int32(countOf(st.Lost, i)) }

// forgetLost drops the count of mini-batch i, which ended.
func (st *ParallelState) forgetLost(i int) { st.Lost = dropCount(st.Lost, i) }
