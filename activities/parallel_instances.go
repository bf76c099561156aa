package activities

import (
	"context"
	"fmt"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
)

// HoldInstanceName is the activity that holds one instance of a parallel
// step on an instance type's queue.
const HoldInstanceName = "HoldInstance"

// InstanceReadySignal is the signal HoldInstance sends its parallel step
// once it holds an instance: the step then runs up to
// max_concurrency_per_instance mini-batches at once on that node's queue.
const InstanceReadySignal = "porch-instance-ready"

// HoldInstanceInput says which of the step's instances to hold.
type HoldInstanceInput struct {
	// Slot is the instance's number, 0 to instance_count-1.
	Slot int `json:"slot"`
}

// InstanceReady is what InstanceReadySignal carries: an instance of the
// step is held on node.
type InstanceReady struct {
	Slot int    `json:"slot"`
	Node string `json:"node"`
	// Attempt is the hold's attempt: a later one replaces an earlier one
	// whose worker was lost.
	Attempt int32 `json:"attempt"`
}

// HoldInstance holds one instance of a parallel step: while it runs, the
// worker's capacity pool counts one instance of the step's type taken (the
// slot supplier of the type's queue took it when this activity was
// polled). It tells the step which node holds the instance and heartbeats
// until the step cancels it, when every mini-batch has ended.
func (a *Activities) HoldInstance(ctx context.Context, in HoldInstanceInput) error {
	if a.Signal == nil {
		return temporal.NewNonRetryableApplicationError(
			"the worker cannot signal workflows: set Activities.Signal", "WorkerMisconfigured", nil)
	}
	info := activity.GetInfo(ctx)
	ready := InstanceReady{Slot: in.Slot, Node: a.node(), Attempt: info.Attempt}
	wf := info.WorkflowExecution
	if err := a.Signal(ctx, wf.ID, wf.RunID, InstanceReadySignal, ready); err != nil {
		return fmt.Errorf("tell parallel step %q that instance %d is held on node %q: %w", wf.ID, in.Slot, ready.Node, err)
	}
	tick := time.NewTicker(a.heartbeatInterval())
	defer tick.Stop()
	for {
		// A heartbeat is how a cancel (or the step's end) reaches this
		// activity.
		activity.RecordHeartbeat(ctx, ready.Node)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}
