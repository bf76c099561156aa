package workflows

import (
	"errors"
	"fmt"
	"time"

	enums "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/porch-pipelines/porch/activities/parallel"
	"github.com/porch-pipelines/porch/activities/spread"
)

// instancesChange is the GetVersion id of parallel steps on an instance
// type's queue running as instances: version 1 holds instance_count
// instances (HoldInstance) and runs max_concurrency_per_instance
// mini-batches at once on each held node, where DefaultVersion ran each
// mini-batch as a whole instance on the type's queue.
const instancesChange = "parallel-instances"

// nodeStartTimeout is how long a mini-batch sent to a held node may wait
// for it: a node that does not take it within this time is lost, and the
// mini-batch goes to another instance.
const nodeStartTimeout = time.Minute

// onInstances says whether the step runs as held instances: only a step
// on an instance type's queue (whose workers count capacity) does, and
// only from version 1 on.
func (r *parallelRun) onInstances(ctx workflow.Context) bool {
	if r.in.Plan.Parallel.Resources.TaskQueue == "" {
		return false
	}
	return workflow.GetVersion(ctx, instancesChange, workflow.DefaultVersion, 1) == 1
}

// heldInstance is one of the step's instances: the node holding it, and
// the mini-batches it runs now.
type heldInstance struct {
	node    string
	running int
	// gen counts the nodes that held the instance, so a mini-batch of an
	// earlier node does not free a process of the current one.
	gen int
}

// runOnInstances is runBatches for a step running as instances: it holds
// instance_count instances of the step's type, each on whichever worker
// of the type has room for one, and keeps max_concurrency_per_instance
// mini-batches running on each held node's own queue.
func (r *parallelRun) runOnInstances(ctx workflow.Context) batchOutcome {
	st := r.st
	per := max(st.Plan.PerInstance, 1)
	holdCtx, releaseHolds := workflow.WithCancel(ctx)
	defer releaseHolds()
	batchCtx, cancelBatches := workflow.WithCancel(ctx)
	sel := workflow.NewSelector(ctx)
	slots := make([]heldInstance, max(st.Plan.Instances, 1))
	running := 0
	var failure error
	fail := func(err error) {
		if failure == nil {
			failure = err
			cancelBatches()
		}
	}
	for i := range slots {
		f := workflow.ExecuteActivity(r.holdOptions(holdCtx), spread.HoldInstanceName, spread.HoldInstanceInput{Slot: i})
		sel.AddFuture(f, func(f workflow.Future) {
			if err := r.holdEnded(ctx, f, slots); err != nil {
				fail(err)
			}
		})
	}
	sel.AddReceive(workflow.GetSignalChannel(ctx, spread.InstanceReadySignal), func(c workflow.ReceiveChannel, _ bool) {
		var ready spread.InstanceReady
		c.Receive(ctx, &ready)
		if ready.Slot >= 0 && ready.Slot < len(slots) && slots[ready.Slot].node != ready.Node {
			slots[ready.Slot] = heldInstance{node: ready.Node, gen: slots[ready.Slot].gen + 1}
		}
	})
	draining := false
	for {
		for s := range slots {
			for failure == nil && !draining && ctx.Err() == nil && slots[s].node != "" && slots[s].running < per {
				queue := parallel.NodeTaskQueue(slots[s].node)
				r.bookQueue = queue
				i, ok := r.nextIndex(ctx)
				if !ok {
					break
				}
				bctx := workflow.WithTaskQueue(r.batchOptions(batchCtx), queue)
				bctx = workflow.WithScheduleToStartTimeout(bctx, nodeStartTimeout)
				f := workflow.ExecuteActivity(bctx, parallel.RunMiniBatchName, parallel.MiniBatchInput{Ref: st.Plan.Ref, Index: i})
				gen := slots[s].gen
				slots[s].running++
				running++
				st.Counters.Running = running
				sel.AddFuture(f, func(f workflow.Future) {
					running--
					st.Counters.Running = running
					if slots[s].gen == gen {
						slots[s].running--
					}
					if lostNode(ctx, f) {
						// The node died with the mini-batch queued
						// for it: another instance runs it.
						st.Requeued = append(st.Requeued, i)
						return
					}
					if err := r.ended(ctx, f); err != nil {
						fail(err)
					}
				})
			}
		}
		if running == 0 && (failure != nil || draining || !r.morePending()) {
			break
		}
		sel.Select(ctx)
		if ctx.Err() != nil {
			fail(temporal.NewCanceledError())
		}
		if !draining && workflow.GetInfo(ctx).GetContinueAsNewSuggested() {
			draining = true
		}
		r.reportProgress(ctx)
	}
	if failure != nil {
		return batchOutcome{err: failure}
	}
	if draining && r.morePending() {
		return batchOutcome{continueAsNew: true}
	}
	return batchOutcome{}
}

// morePending says whether mini-batches are left to start.
func (r *parallelRun) morePending() bool {
	st := r.st
	return st.Next < st.Plan.Batches || len(st.Pending) > 0 || len(st.Requeued) > 0
}

// holdOptions are a HoldInstance activity's options: on the type's queue,
// retried for as long as the step runs (a lost worker's instance is held
// again elsewhere), within first_task_creation_timeout when the step sets
// one.
func (r *parallelRun) holdOptions(ctx workflow.Context) workflow.Context {
	opts := workflow.ActivityOptions{
		TaskQueue:           r.in.Plan.Parallel.Resources.Queue(r.in.Compute),
		StartToCloseTimeout: noTimeout,
		HeartbeatTimeout:    heartbeatTimeout,
		RetryPolicy:         &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 1},
	}
	if s := r.in.Plan.Parallel.FirstTaskCreationTimeoutSeconds; s > 0 {
		opts.ScheduleToStartTimeout = time.Duration(s) * time.Second
	}
	return workflow.WithActivityOptions(ctx, opts)
}

// holdEnded handles a hold that ended before the step released it. It
// returns the step's failure when no instance could be held in time.
func (r *parallelRun) holdEnded(ctx workflow.Context, f workflow.Future, slots []heldInstance) error {
	err := f.Get(ctx, nil)
	if err == nil || isCanceled(err) {
		return nil
	}
	var te *temporal.TimeoutError
	if errors.As(err, &te) && te.TimeoutType() == enums.TIMEOUT_TYPE_SCHEDULE_TO_START {
		for _, s := range slots {
			if s.node != "" {
				return nil // the step runs on fewer instances
			}
		}
		q := r.in.Plan.Parallel.Resources.Queue(r.in.Compute)
		return temporal.NewNonRetryableApplicationError(fmt.Sprintf(
			"no instance of the step started within first_task_creation_timeout (%ds): no worker with room for one serves task queue %q; start one with `porch worker --compute %s`",
			r.in.Plan.Parallel.FirstTaskCreationTimeoutSeconds, q, computeName(r.in.Compute)), ParallelFailedType, nil)
	}
	// Holds are retried for as long as the step runs: this one failed
	// for good (a misconfigured worker).
	return temporal.NewNonRetryableApplicationError("hold an instance of the step: "+ErrorMessage(err), ParallelFailedType, nil)
}

// lostNode says a mini-batch never started because its node was gone.
func lostNode(ctx workflow.Context, f workflow.Future) bool {
	var te *temporal.TimeoutError
	err := f.Get(ctx, nil)
	return errors.As(err, &te) && te.TimeoutType() == enums.TIMEOUT_TYPE_SCHEDULE_TO_START
}
