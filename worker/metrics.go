package worker

import (
	"context"
	"sync"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/interceptor"

	"github.com/porch-pipelines/porch/compiler/plan"
	"github.com/porch-pipelines/porch/telemetry"
)

// computeLabel adds the compute label to the metrics handler of every
// activity on one task queue: the worker knows which compute a queue
// serves, which a queue's name alone does not say without ambiguity
// (compute and instance-type names both hold dashes). A node's own queue
// serves the mini-batches of parallel steps of any compute: their compute
// is that of the step's instance hold, which runs on the compute's queue
// on this worker for as long as its mini-batches come (steps).
//
// With a base handler (the worker's --metrics-address), what an activity
// records goes through base with the compute label alone, not through the
// SDK's activity handler, whose tags (activity and workflow type, task
// queue, ...) porch's metrics do not need: so the worker can make the
// same series exist at 0 as it starts (MiniBatchCountersAtZero).
type computeLabel struct {
	interceptor.WorkerInterceptorBase
	base    client.MetricsHandler
	compute string
	// node says the queue is the node's own.
	node  bool
	steps *stepComputes
}

func (l *computeLabel) InterceptActivity(ctx context.Context, next interceptor.ActivityInboundInterceptor) interceptor.ActivityInboundInterceptor {
	return &computeLabelInbound{ActivityInboundInterceptorBase: interceptor.ActivityInboundInterceptorBase{Next: next}, label: l}
}

type computeLabelInbound struct {
	interceptor.ActivityInboundInterceptorBase
	label *computeLabel
}

// Init slips the labelling outbound interceptor under the activity.
func (i *computeLabelInbound) Init(outbound interceptor.ActivityOutboundInterceptor) error {
	return i.Next.Init(&computeLabelOutbound{ActivityOutboundInterceptorBase: interceptor.ActivityOutboundInterceptorBase{Next: outbound}, label: i.label})
}

// ExecuteActivity records the compute of the activity's step while it
// runs, for the activities of that step on the node's queue.
func (i *computeLabelInbound) ExecuteActivity(ctx context.Context, in *interceptor.ExecuteActivityInput) (any, error) {
	if i.label.node {
		return i.Next.ExecuteActivity(ctx, in)
	}
	id := activity.GetInfo(ctx).WorkflowExecution.ID
	i.label.steps.add(id, i.label.compute)
	defer i.label.steps.done(id)
	return i.Next.ExecuteActivity(ctx, in)
}

type computeLabelOutbound struct {
	interceptor.ActivityOutboundInterceptorBase
	label *computeLabel
}

// GetMetricsHandler is the activity's handler with the compute label.
func (o *computeLabelOutbound) GetMetricsHandler(ctx context.Context) client.MetricsHandler {
	compute := telemetry.Compute(o.label.compute)
	if o.label.node {
		compute = o.label.steps.compute(o.Next.GetInfo(ctx).WorkflowExecution.ID)
	}
	h := o.label.base
	if h == nil {
		h = o.Next.GetMetricsHandler(ctx)
	}
	return h.WithTags(map[string]string{telemetry.LabelCompute: compute})
}

// stepComputes are the computes of the steps (by workflow id) with an
// activity running on one of the worker's compute queues.
type stepComputes struct {
	mu      sync.Mutex
	running map[string]stepCompute
}

type stepCompute struct {
	compute string
	n       int
}

func (s *stepComputes) add(id, compute string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.running == nil {
		s.running = map[string]stepCompute{}
	}
	sc := s.running[id]
	s.running[id] = stepCompute{compute: compute, n: sc.n + 1}
}

// idle says whether no step has an activity running here.
func (s *stepComputes) idle() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.running) == 0
}

func (s *stepComputes) done(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sc := s.running[id]
	if sc.n <= 1 {
		delete(s.running, id)
		return
	}
	sc.n--
	s.running[id] = sc
}

// compute is the compute label of step id; "unknown" when none of its
// activities runs on a compute queue here.
func (s *stepComputes) compute(id string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if sc, ok := s.running[id]; ok {
		return telemetry.Compute(sc.compute)
	}
	return "unknown"
}

// announce sets porch_worker_computes for each compute whose steps the
// worker runs, by tier, from the queues it started, and makes the
// mini-batch counters of each such compute exist at 0.
func (w *Worker) announce(h client.MetricsHandler) {
	if h == nil {
		return
	}
	zeroed := map[string]bool{}
	for _, q := range w.served {
		tier := "dedicated"
		if plan.IsSpotTaskQueue(q.name) {
			tier = "spot"
		}
		telemetry.WorkerServes(h, q.compute, tier)
		if !zeroed[q.compute] {
			zeroed[q.compute] = true
			telemetry.MiniBatchCountersAtZero(h, q.compute)
		}
	}
}
