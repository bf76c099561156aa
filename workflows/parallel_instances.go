package workflows

import (
	"errors"
	"fmt"
	"slices"
	"time"

	enums "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/porch-pipelines/porch/activities/parallel"
	"github.com/porch-pipelines/porch/activities/spread"
	"github.com/porch-pipelines/porch/compiler/plan"
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
	if !r.in.Plan.Parallel.Resources.OnInstanceType() {
		return false
	}
	return workflow.GetVersion(ctx, instancesChange, workflow.DefaultVersion, 1) == 1
}

// heldInstance is one of the step's instances: the node holding it, and
// the mini-batches it runs now.
type heldInstance struct {
	node    string
	running int
	// lost says the node's worker stopped heartbeating: it takes no
	// mini-batches until it is held again (a new gen), one of its
	// mini-batches succeeds, or nodeStartTimeout passes.
	lost bool
	// gen counts the nodes that held the instance, so a mini-batch of an
	// earlier node does not free a process of the current one.
	gen int
	// moving are the node's mini-batches in flight, for failover to move
	// them elsewhere when the node is lost.
	moving []*movable
}

// movable is a mini-batch in flight on a held node: cancelled when the
// node is lost, to run again on another instance.
type movable struct {
	cancel workflow.CancelFunc
	moved  bool
}

// moveAway cancels the mini-batches in flight on a lost node; they run
// again elsewhere. One not started yet is cancelled at once, rather than
// waiting out nodeStartTimeout on the dead node's queue.
func moveAway(batches []*movable) {
	for _, b := range batches {
		if !b.moved {
			b.moved = true
			b.cancel()
		}
	}
}

// runOnInstances is runBatches for a step running as instances: it holds
// instance_count instances of the step's type, each on whichever worker
// of the type has room for one, and keeps max_concurrency_per_instance
// mini-batches running on each held node's own queue.
func (r *parallelRun) runOnInstances(ctx workflow.Context) batchOutcome {
	st := r.st
	failover := r.failover(ctx)
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
	sel.AddReceive(workflow.GetSignalChannel(ctx, spread.InstanceReadySignal), func(c workflow.ReceiveChannel, _ bool) {
		var ready spread.InstanceReady
		c.Receive(ctx, &ready)
		if ready.Slot >= 0 && ready.Slot < len(slots) && (slots[ready.Slot].node != ready.Node || slots[ready.Slot].lost) {
			if failover {
				// The instance moved: its last node was lost.
				moveAway(slots[ready.Slot].moving)
			}
			slots[ready.Slot] = heldInstance{node: ready.Node, gen: slots[ready.Slot].gen + 1}
		}
	})
	// lose marks slot s's node lost, if it still holds the slot, until a
	// timer lets it take mini-batches again (nodeStartTimeout then tells
	// a dead node from a slow one).
	lose := func(s, gen int) {
		if slots[s].gen != gen || slots[s].lost {
			return
		}
		slots[s].lost = true
		if n := slots[s].node; n != "" && !slices.Contains(r.lostNodes, n) {
			r.lostNodes = append(r.lostNodes, n)
		}
		moveAway(slots[s].moving)
		sel.AddFuture(newTimer(holdCtx, nodeStartTimeout, fmt.Sprintf("instance %d lost: wait before reuse", s)), func(workflow.Future) {
			if slots[s].gen == gen {
				slots[s].lost = false
			}
		})
	}
	// hold holds instance i. From version 1 of failoverChange a hold
	// whose node stops heartbeating comes back here: the node is lost,
	// its mini-batches move (even those it never started), and the
	// instance is held again, on another worker if one has room.
	var hold func(i int)
	hold = func(i int) {
		hctx := r.holdOptions(holdCtx, i)
		if failover {
			opts := workflow.GetActivityOptions(hctx)
			opts.HeartbeatTimeout = r.heartbeat()
			heartbeatComesBack(&opts)
			hctx = workflow.WithActivityOptions(hctx, opts)
		}
		f := workflow.ExecuteActivity(hctx, spread.HoldInstanceName, spread.HoldInstanceInput{Slot: i})
		r.holdEnds = append(r.holdEnds, f)
		sel.AddFuture(f, func(f workflow.Future) {
			if failover && isPreemption(f.Get(ctx, nil)) && failure == nil && ctx.Err() == nil {
				workflow.GetLogger(ctx).Info(fmt.Sprintf("porch: instance %d lost its node %s (no heartbeat within %s): holding it again", i, slots[i].node, r.heartbeat()))
				lose(i, slots[i].gen)
				hold(i)
				return
			}
			if err := r.holdEnded(ctx, f, slots); err != nil {
				fail(err)
			}
		})
	}
	for i := range slots {
		hold(i)
	}
	draining := false
	for {
		for s := range slots {
			for failure == nil && !draining && ctx.Err() == nil && slots[s].node != "" && !slots[s].lost && slots[s].running < per {
				queue := plan.NodeTaskQueue(slots[s].node)
				r.bookQueue = queue
				i, ok := r.nextIndex(ctx)
				if !ok {
					break
				}
				bctx := workflow.WithTaskQueue(r.batchOptions(batchCtx, i), queue)
				bctx = workflow.WithScheduleToStartTimeout(bctx, nodeStartTimeout)
				in := parallel.MiniBatchInput{Ref: st.Plan.Ref, Index: i}
				b := &movable{}
				if failover {
					bctx = r.nodeBatch(bctx, i)
					bctx, b.cancel = workflow.WithCancel(bctx)
					in.PriorAttempts = st.lostAttempts(i)
					slots[s].moving = append(slots[s].moving, b)
				}
				f := workflow.ExecuteActivity(bctx, parallel.RunMiniBatchName, in)
				gen, node := slots[s].gen, slots[s].node
				slots[s].running++
				running++
				st.Counters.Running = running
				sel.AddFuture(f, func(f workflow.Future) {
					running--
					st.Counters.Running = running
					if slots[s].gen == gen {
						slots[s].running--
						slots[s].moving = slices.DeleteFunc(slots[s].moving, func(m *movable) bool { return m == b })
					}
					if b.moved && isCanceled(f.Get(ctx, nil)) && failure == nil && ctx.Err() == nil {
						// Moved off a lost node: another instance runs it.
						st.Requeued = append(st.Requeued, i)
						return
					}
					if lostNode(ctx, f) {
						// The node died with the mini-batch queued
						// for it: another instance runs it.
						st.Requeued = append(st.Requeued, i)
						if failover {
							lose(s, gen)
						}
						return
					}
					if failover && r.lostWorker(ctx, f, i, node) {
						lose(s, gen)
						return
					}
					st.forgetLost(i)
					err := r.ended(ctx, f)
					if err != nil {
						fail(err)
					} else if failover && slots[s].gen == gen && f.Get(ctx, nil) == nil {
						slots[s].lost = false // the node is alive after all
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
		r.show(ctx)
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
func (r *parallelRun) holdOptions(ctx workflow.Context, slot int) workflow.Context {
	opts := workflow.ActivityOptions{
		Summary:             fmt.Sprintf("hold instance %d", slot),
		TaskQueue:           r.in.Plan.Parallel.Resources.Queue(r.in.Compute),
		StartToCloseTimeout: noTimeout,
		HeartbeatTimeout:    heartbeatTimeout,
		RetryPolicy:         &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 1},
		WaitForCancellation: r.holdsEnd(ctx),
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

// holdsChange is the GetVersion id of a parallel step waiting for the
// holds it released: version 1 waits (up to monitorGrace) for each
// released HoldInstance to stop before the step's run closes, so a closed
// step shows no hold pending (CANCEL_REQUESTED) in Temporal.
const holdsChange = "parallel-holds-end"

// holdsEnd says whether this run waits for its released holds to stop.
func (r *parallelRun) holdsEnd(ctx workflow.Context) bool {
	if r.holdsVersion == nil {
		v := workflow.GetVersion(ctx, holdsChange, workflow.DefaultVersion, 1) == 1
		r.holdsVersion = &v
	}
	return *r.holdsVersion
}

// awaitHolds waits for the holds still pending after their release to
// stop, at most monitorGrace (a hold on a lost node never answers), from
// version 1 of holdsChange on.
func (r *parallelRun) awaitHolds(ctx workflow.Context) {
	if len(r.holdEnds) == 0 || !r.holdsEnd(ctx) {
		return
	}
	var pending []workflow.Future
	for _, f := range r.holdEnds {
		if !f.IsReady() {
			pending = append(pending, f)
		}
	}
	awaitStopped(ctx, pending, "released instances stop")
}
