package spread

import (
	"context"
	"fmt"
	"net"
	"time"

	"github.com/porch-pipelines/porch/activities/stepio"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"
)

// Activities are the activities that hold instances of steps spread over
// workers.
type Activities struct {
	*stepio.Host
	// Address is where other workers reach this one (a distributed
	// step's instance 0 listens there); "" means the host's first
	// non-loopback IPv4 address.
	Address string
	// Signal sends a signal to a workflow run (client.SignalWorkflow):
	// HoldInstance tells its step where it holds an instance.
	Signal func(ctx context.Context, workflowID, runID, name string, arg any) error
}

// Register registers HoldInstance under its explicit name.
func (a *Activities) Register(r worker.ActivityRegistry) {
	r.RegisterActivityWithOptions(a.HoldInstance, activity.RegisterOptions{Name: HoldInstanceName})
}

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
	// Try counts the times a distributed step let its holds go, unable
	// to hold every instance at once, and tried again.
	Try int `json:"try,omitempty"`
}

// InstanceReady is what InstanceReadySignal carries: an instance of the
// step is held on node.
type InstanceReady struct {
	Slot int    `json:"slot"`
	Try  int    `json:"try,omitempty"`
	Node string `json:"node"`
	// Attempt is the hold's attempt: a later one replaces an earlier one
	// whose worker was lost.
	Attempt int32 `json:"attempt"`
	// Address is the node's address for the other instances, and Port a
	// port free on it when the hold began: a distributed step's instance
	// 0 listens there.
	Address string `json:"address,omitempty"`
	Port    int    `json:"port,omitempty"`
}

// address is where other workers reach this one: Activities.Address, else
// the first non-loopback IPv4 address of the host, else loopback.
func (a *Activities) address() string {
	if a.Address != "" {
		return a.Address
	}
	addrs, err := net.InterfaceAddrs()
	if err == nil {
		for _, ad := range addrs {
			if ip, ok := ad.(*net.IPNet); ok && !ip.IP.IsLoopback() && ip.IP.To4() != nil {
				return ip.IP.String()
			}
		}
	}
	return "127.0.0.1"
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
	ports, err := stepio.FreePorts(1)
	if err != nil {
		return err
	}
	ready := InstanceReady{Slot: in.Slot, Try: in.Try, Node: a.NodeName(), Attempt: info.Attempt, Address: a.address(), Port: ports[0]}
	wf := info.WorkflowExecution
	if err := a.Signal(ctx, wf.ID, wf.RunID, InstanceReadySignal, ready); err != nil {
		return fmt.Errorf("tell parallel step %q that instance %d is held on node %q: %w", wf.ID, in.Slot, ready.Node, err)
	}
	tick := time.NewTicker(a.BeatInterval())
	defer tick.Stop()
	for {
		// A heartbeat is how a cancel (or the step's end) reaches this
		// activity.
		activity.RecordHeartbeat(ctx, stepio.Beat{Phase: "holding an instance", Node: ready.Node})
		select {
		case <-ctx.Done():
			return released(ctx, in.Slot, wf.ID)
		case <-tick.C:
		}
	}
}

// released ends a hold whose context ended. The step cancelling it (its
// mini-batches are done) is the normal end of every hold: it is logged as
// such and the hold completes, rather than failing with "context
// canceled", which the SDK logs as an error. Any other end (the worker
// stopping, the step gone) stays an error.
func released(ctx context.Context, slot int, step string) error {
	if !temporal.IsCanceledError(context.Cause(ctx)) {
		return ctx.Err()
	}
	activity.GetLogger(ctx).Info(fmt.Sprintf("porch: instance %d of parallel step %q released", slot, step))
	return nil
}
