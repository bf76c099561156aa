package fleet

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	enums "go.temporal.io/api/enums/v1"
	taskqueuepb "go.temporal.io/api/taskqueue/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"

	"github.com/porch-pipelines/porch/compiler/plan"
	"github.com/porch-pipelines/porch/telemetry"
	"github.com/porch-pipelines/porch/workflows"
)

// Options say which server a fleet's nodes serve and where they run.
type Options struct {
	Client             client.Client
	Address, Namespace string
	// Home is the porch home; nodes' logs and status files go to
	// Home/fleet.
	Home string
	// Executable is the porch binary nodes run; "" is this process's.
	Executable string
	// Skip are computes served already (porch dev --compute): no fleet.
	Skip []string
	// Events receives a line per scale event.
	Events io.Writer
	// Interval is how often the fleet reads the backlogs (default 1 s);
	// the catalogue is read every fifth time.
	Interval time.Duration
	// Metrics receives porch_fleet_nodes by compute; nil records none.
	Metrics client.MetricsHandler
	// Runtime is the nodes' runtime (porch worker --runtime), "" for
	// their default.
	Runtime string
}

// Fleet scales the nodes of every amlcompute compute in the catalogue.
type Fleet struct {
	opts   Options
	pools  map[string]*pool
	cancel context.CancelFunc
	done   chan struct{}
	// lastState is the state file last written.
	lastState []byte
	// numbered counts the nodes started per compute, which names them
	// <compute>-<n>: a compute deleted and registered again gets new
	// names, not those of nodes that may still be stopping.
	numbered map[string]int
	// problems holds the last error reported about the catalogue ("") and each
	// compute's backlog, so a lasting one is said once.
	problems map[string]string
}

// pool is one compute's nodes.
type pool struct {
	compute plan.Compute
	// deleted: the compute left the catalogue; its nodes drain.
	deleted bool
	nodes   []*node
	// holdUntil delays starts after a node failed, doubling up to a minute,
	// and for scaleUpSettle after a scale-up.
	holdUntil time.Time
	backoff   time.Duration
}

// Start starts the fleet's loop. Stop stops it and every node.
func Start(opts Options) (*Fleet, error) {
	if opts.Executable == "" {
		exe, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("find the porch binary for fleet nodes: %v", err)
		}
		opts.Executable = exe
	}
	if opts.Interval == 0 {
		opts.Interval = time.Second
	}
	if err := os.MkdirAll(filepath.Join(opts.Home, "fleet"), 0o755); err != nil {
		return nil, fmt.Errorf("create the fleet's folder: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	f := &Fleet{opts: opts, pools: map[string]*pool{}, numbered: map[string]int{}, problems: map[string]string{}, cancel: cancel, done: make(chan struct{})}
	go f.run(ctx)
	return f, nil
}

// Stop stops every node (SIGTERM, then SIGKILL after stopTimeout) and
// returns when they have exited.
func (f *Fleet) Stop() {
	f.cancel()
	<-f.done
}

// Dir is the folder of the nodes' logs.
func (f *Fleet) Dir() string { return filepath.Join(f.opts.Home, "fleet") }

func (f *Fleet) run(ctx context.Context) {
	// Nodes are started from this goroutine's thread, and a node's
	// parent-death signal fires when the thread that started it ends: so
	// the goroutine keeps its thread, which ends with it, after the nodes.
	runtime.LockOSThread()
	defer close(f.done)
	defer removeState(f.opts.Home)
	t := time.NewTicker(f.opts.Interval)
	defer t.Stop()
	for i := 0; ; i++ {
		if i%5 == 0 {
			f.readCatalog(ctx)
		}
		f.tick(ctx)
		select {
		case <-ctx.Done():
			f.stopAll()
			return
		case <-t.C:
		}
	}
}

// readCatalog adds a pool for each new amlcompute compute, updates those
// that changed, and drains those deleted. A failed read changes nothing.
func (f *Fleet) readCatalog(ctx context.Context) {
	rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	cat, err := workflows.GetCatalog(rctx, f.opts.Client)
	if f.problem("", "fleet: read the catalogue", err) {
		return
	}
	seen := map[string]bool{}
	for _, c := range cat.Computes {
		if c.Type != plan.ComputeAML || slices.Contains(f.opts.Skip, c.Name) {
			continue
		}
		seen[c.Name] = true
		p := f.pools[c.Name]
		if p == nil {
			p = &pool{}
			f.pools[c.Name] = p
		}
		if p.compute.MinInstances != c.MinInstances || p.compute.MaxInstances != c.MaxInstances ||
			p.compute.IdleTimeBeforeScaleDown != c.IdleTimeBeforeScaleDown || p.deleted {
			f.eventf("%s: fleet of %d to %d nodes, scale down after %ds idle", c.Name, c.MinInstances, c.MaxInstances,
				c.IdleTimeBeforeScaleDown)
		}
		p.compute, p.deleted = c, false
	}
	for _, name := range f.names() {
		if p := f.pools[name]; !seen[name] && !p.deleted {
			p.deleted = true
			f.eventf("%s: deleted from the catalogue: draining %d nodes", name, len(p.nodes))
		}
	}
}

// names are the pools' computes, sorted.
func (f *Fleet) names() []string {
	names := make([]string, 0, len(f.pools))
	for name := range f.pools {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// tick reaps exited nodes and scales every pool once, in name order.
func (f *Fleet) tick(ctx context.Context) {
	for _, name := range f.names() {
		p := f.pools[name]
		f.reap(p)
		if p.deleted && len(p.nodes) == 0 {
			f.countNodes(name, 0)
			delete(f.pools, name)
			continue
		}
		f.scale(ctx, p)
		f.countNodes(name, len(p.nodes))
	}
	f.writeState()
}

// countNodes sets porch_fleet_nodes for compute.
func (f *Fleet) countNodes(compute string, n int) {
	if f.opts.Metrics != nil {
		telemetry.FleetNodes(f.opts.Metrics, compute, n)
	}
}

// reap forgets exited nodes, and kills those that outlived stopTimeout.
func (f *Fleet) reap(p *pool) {
	kept := p.nodes[:0]
	for _, n := range p.nodes {
		switch {
		case !n.done():
			if !n.stopping.IsZero() && time.Since(n.stopping) > stopTimeout {
				n.kill()
			}
			kept = append(kept, n)
		case n.stopping.IsZero():
			// It stopped by itself: a crash, or a server it could not reach.
			f.eventf("%s: node %s %s", p.compute.Name, n.name, n.exitText())
			p.hold()
		}
	}
	p.nodes = kept
}

// hold delays the pool's next starts after a failure: a second, doubling
// up to a minute until a node comes up.
func (p *pool) hold() {
	p.backoff = min(max(2*p.backoff, time.Second), time.Minute)
	p.holdUntil = time.Now().Add(p.backoff)
}

// serving are the nodes not stopping, by name, and their states.
func (p *pool) serving() (map[string]*node, []NodeState) {
	byName := map[string]*node{}
	var states []NodeState
	for _, n := range p.nodes {
		if n.stopping.IsZero() {
			st, ready := n.state()
			if ready {
				p.backoff = 0 // a node came up: the failure has passed
			}
			byName[n.name] = n
			states = append(states, st)
		}
	}
	return byName, states
}

// scaleUpSettle is how long the fleet waits after starting nodes before it
// starts more: a new node takes its step from the backlog before the
// server's backlog count (cached for a second) says so, and the step would
// be counted twice, as running and as waiting.
const scaleUpSettle = 3 * time.Second

// scale applies Decide to a pool's serving nodes.
func (f *Fleet) scale(ctx context.Context, p *pool) {
	c := p.compute
	policy := Policy{Min: c.MinInstances, Max: c.MaxInstances, IdleTimeout: time.Duration(c.IdleTimeBeforeScaleDown) * time.Second}
	backlog := 0
	if p.deleted {
		policy = Policy{}
	} else {
		var err error
		backlog, err = f.backlog(ctx, nodeQueue(c))
		if f.problem(c.Name, c.Name+": read the backlog of task queue "+nodeQueue(c), err) {
			return // unknown demand: change nothing
		}
	}
	serving, states := p.serving()
	d := Decide(policy, backlog, states, time.Now())
	if d.Start > 0 && time.Now().Before(p.holdUntil) {
		return
	}
	if d.Start > 0 {
		f.eventf("%s: scaling %d -> %d nodes: backlog %d", c.Name, len(states), len(states)+d.Start, backlog)
		p.holdUntil = time.Now().Add(scaleUpSettle)
	}
	for range d.Start {
		f.numbered[c.Name]++
		n, err := startNode(&f.opts, c.Name, fmt.Sprintf("%s-%d", c.Name, f.numbered[c.Name]))
		if err != nil {
			f.eventf("%s: cannot start a node: %v", c.Name, err)
			p.hold()
			return
		}
		p.nodes = append(p.nodes, n)
	}
	if len(d.Stop) > 0 {
		why := fmt.Sprintf("idle for %ds", c.IdleTimeBeforeScaleDown)
		if p.deleted {
			why = "compute deleted"
		} else if len(states) > c.MaxInstances {
			why = fmt.Sprintf("max_instances %d", c.MaxInstances)
		}
		f.eventf("%s: scaling %d -> %d nodes: %s %s", c.Name, len(states), len(states)-len(d.Stop), strings.Join(d.Stop, ", "), why)
	}
	for _, name := range d.Stop {
		serving[name].stop()
	}
}

// nodeQueue is the task queue a compute's fleet nodes serve: the spot
// variant for a low_priority compute, whose workers are preemptible.
func nodeQueue(c plan.Compute) string {
	if c.Tier == plan.TierLowPriority {
		return plan.SpotTaskQueue(plan.TaskQueue(c.Name))
	}
	return plan.TaskQueue(c.Name)
}

// backlog is the number of activity tasks waiting in a task queue, as
// the server counts them.
func (f *Fleet) backlog(ctx context.Context, queue string) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	resp, err := f.opts.Client.WorkflowService().DescribeTaskQueue(ctx, &workflowservice.DescribeTaskQueueRequest{
		Namespace:     f.opts.Namespace,
		TaskQueue:     &taskqueuepb.TaskQueue{Name: queue, Kind: enums.TASK_QUEUE_KIND_NORMAL},
		TaskQueueType: enums.TASK_QUEUE_TYPE_ACTIVITY,
		ReportStats:   true,
	})
	if err != nil {
		return 0, err
	}
	return int(resp.GetStats().GetApproximateBacklogCount()), nil
}

// stopAll stops every node and waits for them, killing those that take
// longer than stopTimeout.
func (f *Fleet) stopAll() {
	var all []*node
	for _, p := range f.pools {
		for _, n := range p.nodes {
			n.stop()
			all = append(all, n)
		}
	}
	if len(all) > 0 {
		f.eventf("fleet: stopping %d nodes", len(all))
	}
	deadline := time.NewTimer(stopTimeout)
	defer deadline.Stop()
	late := false
	for _, n := range all {
		if !late {
			select {
			case <-n.exited:
				continue
			case <-deadline.C:
				late = true
			}
		}
		n.kill()
		<-n.exited
	}
}

// problem reports err once per streak of the same error about what, and
// says whether there was one.
func (f *Fleet) problem(what, doing string, err error) bool {
	if err == nil {
		delete(f.problems, what)
		return false
	}
	if f.problems[what] != err.Error() {
		f.problems[what] = err.Error()
		f.eventf("%s: %v (retrying)", doing, err)
	}
	return true
}

func (f *Fleet) eventf(format string, args ...any) {
	if f.opts.Events != nil {
		fmt.Fprintf(f.opts.Events, time.Now().Format("15:04:05")+" "+format+"\n", args...)
	}
}
