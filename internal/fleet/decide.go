// Package fleet runs a local fleet of `porch worker` processes per
// amlcompute cluster for `porch dev`, scaled as Azure ML scales a
// cluster: nodes start as the compute's task queue backlog grows, up to
// max_instances; min_instances keep running; a node idle for
// idle_time_before_scale_down stops. A busy node is never stopped.
//
// Decide is the policy, a pure function; Fleet applies it every second to
// real processes.
package fleet

import (
	"slices"
	"strings"
	"time"
)

// Policy is a compute's scale settings.
type Policy struct {
	Min, Max int
	// IdleTimeout is how long a node stays idle before it stops, when
	// more than Min run.
	IdleTimeout time.Duration
}

// NodeState is what the fleet knows of one of its running nodes.
type NodeState struct {
	Name string
	// Busy says the node runs a step now.
	Busy bool
	// IdleSince is when the node last finished a step, or when it
	// started; meaningless while Busy.
	IdleSince time.Time
}

// Decision is what to do now: start Start nodes, or stop the named ones.
type Decision struct {
	// Want is the number of nodes the compute should have.
	Want  int
	Start int
	Stop  []string
}

// Decide scales a compute's nodes. Each node runs one step at a time, so
// the compute wants a node per running step plus one per step waiting in
// the backlog, within [Min, Max]. Nodes beyond that stop once idle for
// the idle timeout, the longest idle first; nodes beyond Max (a lowered
// Max, a deleted compute) stop as soon as they are idle. Busy nodes never
// stop.
func Decide(p Policy, backlog int, nodes []NodeState, now time.Time) Decision {
	busy := 0
	for _, n := range nodes {
		if n.Busy {
			busy++
		}
	}
	want := min(max(busy+max(backlog, 0), p.Min), max(p.Max, 0))
	d := Decision{Want: want}
	if len(nodes) < want {
		d.Start = want - len(nodes)
		return d
	}
	excess := len(nodes) - want
	// Nodes beyond Max stop without waiting for the idle timeout.
	urgent := len(nodes) - max(p.Max, 0)
	var idle []NodeState
	for _, n := range nodes {
		if !n.Busy {
			idle = append(idle, n)
		}
	}
	slices.SortFunc(idle, func(a, b NodeState) int {
		if c := a.IdleSince.Compare(b.IdleSince); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
	for _, n := range idle {
		if len(d.Stop) == excess || (len(d.Stop) >= urgent && now.Sub(n.IdleSince) < p.IdleTimeout) {
			break
		}
		d.Stop = append(d.Stop, n.Name)
	}
	return d
}
