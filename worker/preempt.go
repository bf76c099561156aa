package worker

import (
	"github.com/porch-pipelines/porch/activities/lifeline"
	"github.com/porch-pipelines/porch/compiler/plan"
)

// spotQueue says whether the worker serves compute's steps as a
// preemptible worker: as --preemptible says, else when the compute is a
// low_priority amlcompute (all its nodes are spot VMs).
func (o Options) spotQueue(cat *plan.Catalog, compute string) bool {
	if o.Preemptible != nil {
		return *o.Preemptible
	}
	if cat == nil {
		return false
	}
	c, ok := cat.FindCompute(compute)
	return ok && c.Type == plan.ComputeAML && c.Tier == plan.TierLowPriority
}

// tierQueues are the variants of a compute's queues the worker serves: the
// spot ones for a preemptible worker, both for a worker standing in for
// every node (AnyNode: a run on a scratch server, where this machine is the
// whole cluster, spot VMs included).
func (o Options) tierQueues(cat *plan.Catalog, compute string, qs []queue) []queue {
	spot := make([]queue, len(qs))
	for i, q := range qs {
		q.name = plan.SpotTaskQueue(q.name)
		spot[i] = q
	}
	switch {
	case o.AnyNode:
		return append(qs, spot...)
	case o.spotQueue(cat, compute):
		return spot
	}
	return qs
}

// Preemptible says whether this worker serves spot queues: whether it
// stops with Preempt rather than Stop.
func (w *Worker) Preemptible() bool { return w.preemptible }

// Preempt stops the worker the way a reclaimed spot VM stops: at once. It
// closes the client, so that no running activity reports an end, then
// kills every process group the worker started for its steps (their
// lifelines' groups). The server
// sees the activities' heartbeats stop and schedules them again; a spot
// step's workflow counts that as a preemption. The caller exits next.
func (w *Worker) Preempt() {
	w.client.Close()
	lifeline.KillAll()
}
