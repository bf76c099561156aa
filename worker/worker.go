// Package worker wires porch's workflows and activities onto task queues: the
// default queue runs workflows (and the steps of the default compute), and
// each compute target is a task queue of its own.
package worker

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/interceptor"
	sdkworker "go.temporal.io/sdk/worker"

	"github.com/porch-pipelines/porch/activities"
	"github.com/porch-pipelines/porch/activities/launch"
	"github.com/porch-pipelines/porch/compiler/plan"
	"github.com/porch-pipelines/porch/workflows"
)

// heartbeatInterval is how often a running activity heartbeats, and how
// often its heartbeats reach the server (steadyHeartbeats sends them).
// The SDK's throttle (up to 0.8 of the heartbeat timeout) would delay a
// cancel, and with it the kill of a step's processes, by many seconds.
const heartbeatInterval = time.Second

// stopWait bounds how long Stop waits for canceled steps to end.
const stopWait = 30 * time.Second

// workflowDeadlock is how long workflow code may run without yielding
// before its task fails as a deadlock: half the workflow task timeout.
const workflowDeadlock = 5 * time.Second

// catalogTimeout bounds reading the server's catalogue of datastores; a
// worker keeps its last copy when it cannot.
const catalogTimeout = 5 * time.Second

// startCatalogTimeout bounds reading the catalogue at start, when a
// worker learns its computes' instance types: it cannot start without.
const startCatalogTimeout = 30 * time.Second

// Options says what a worker serves.
type Options struct {
	// Home is the porch home (datastores, working folders). Start
	// creates it if missing and refuses a home it cannot write in.
	Home string
	// Computes are the compute names whose task queues this worker serves
	// activities on; "" is the default queue.
	Computes []string
	// Workflows also runs porch's workflows on the default queue.
	Workflows bool
	// BuildID names this worker's code in workflow histories; "" means
	// porch@<module version>.
	BuildID string
	// Python is every step's python and python3 and the interpreter of
	// parallel steps' entry scripts; "" means $PORCH_PYTHON, else python3
	// on PATH.
	Python string
	// Node names this worker in parallel steps' logs and resource
	// monitors; "" means <hostname>-<pid>.
	Node string
	// AdvertiseAddress is where other workers reach this one: a
	// distributed step's MASTER_ADDR when its instance 0 runs here; ""
	// means the host's first non-loopback IPv4 address.
	AdvertiseAddress string
	// Datastores reads the registered datastores; nil means the catalogue
	// of the server the worker's client is connected to. An embedded
	// `porch run` gives the catalogue of the running `porch dev`.
	Datastores func(ctx context.Context) ([]plan.Datastore, error)
	// InstanceTypes are the instance types of kubernetes computes this
	// worker serves; none means every one its labels and capacity allow.
	InstanceTypes []string
	// Labels are this worker's node labels, which instance types'
	// nodeSelectors must be satisfied by.
	Labels []plan.Label
	// AnyNode makes the worker stand in for every node of its kubernetes
	// computes, whatever their nodeSelectors, and for both dedicated and
	// preemptible workers (a run on a scratch server, where this machine
	// is the whole cluster).
	AnyNode bool
	// Catalog resolves the computes' instance types; nil reads the
	// server's catalogue.
	Catalog *plan.Catalog
	// Capacity is what this worker runs at once on instance-type queues;
	// a zero CPU or memory is this machine's, a negative GPU count what
	// nvidia-smi lists.
	Capacity plan.ResourceList
	// Slots bounds the activities running at once on each compute queue
	// without capacity accounting (an amlcompute's); 0 is the SDK's
	// default. The default queue and the node's own are not bounded. A
	// fleet node of porch dev runs one step at a time, as an Azure ML
	// cluster node does.
	Slots int
	// StatusFile, when set, is a file the worker keeps up to date with
	// its NodeStatus (running activities, idle since), for a local fleet.
	StatusFile string
	// Metrics is the metrics handler of the worker's client, for the
	// porch_worker_computes gauge and porch's mini-batch metrics; nil
	// records none.
	Metrics client.MetricsHandler
	// Runtime is where steps with an environment run: the host (the zero
	// Runtime) or containers through podman or docker.
	Runtime launch.Runtime
	// Preemptible makes the worker a spot worker: it serves the spot
	// variants of its queues (plan.SpotTaskQueue), where spot steps run,
	// and stops with Preempt. nil means preemptible for the low_priority
	// amlcomputes it serves, dedicated for the rest.
	Preemptible *bool
	// PlanCheckEvery is how often a stored plan this worker runs checks
	// what holds it; 0 means workflows.DefaultPlanCheckEvery.
	PlanCheckEvery time.Duration
	// PlanGrace is how long a stored plan stays once nothing holds it; 0
	// means workflows.DefaultPlanGrace.
	PlanGrace time.Duration
}

// CatalogDatastores reads the datastores of the catalogue on c's server.
func CatalogDatastores(c client.Client) func(ctx context.Context) ([]plan.Datastore, error) {
	return func(ctx context.Context) ([]plan.Datastore, error) {
		cat, err := workflows.GetCatalog(ctx, c)
		return cat.Datastores, err
	}
}

// Worker is a set of started SDK workers, one per task queue.
type Worker struct {
	workers []sdkworker.Worker
	// served are the queues whose steps the worker runs.
	served []queue
	// steps are the computes of the steps running here, for metrics.
	steps       stepComputes
	acts        *activities.Activities
	status      *statusWriter
	porchStatus *statusAttribute
	// plans caches the plans runs read, by hash.
	plans       *planChunks
	client      client.Client
	preemptible bool
}

// Start starts workers for every queue the options name: the default
// queue first, so that a worker running workflows answers the catalogue
// query that resolves a kubernetes compute's instance-type queues.
func Start(c client.Client, opts Options) (*Worker, error) {
	if len(opts.Computes) == 0 && !opts.Workflows {
		return nil, fmt.Errorf("a worker needs a compute to serve or --workflows")
	}
	if err := checkHome(opts.Home); err != nil {
		return nil, err
	}
	if opts.BuildID == "" {
		opts.BuildID = defaultBuildID()
	}
	if opts.Python == "" {
		opts.Python = os.Getenv("PORCH_PYTHON")
	}
	datastores := opts.Datastores
	if datastores == nil {
		datastores = CatalogDatastores(c)
	}
	acts := &activities.Activities{
		Home: opts.Home, HeartbeatInterval: heartbeatInterval, Python: opts.Python, Node: opts.Node, Runtime: opts.Runtime,
		Signal: c.SignalWorkflow, Address: opts.AdvertiseAddress, WorkflowClosed: workflowClosed(c),
		Datastores: func(ctx context.Context) ([]plan.Datastore, error) {
			ctx, cancel := context.WithTimeout(ctx, catalogTimeout)
			defer cancel()
			return datastores(ctx)
		},
	}
	w := &Worker{acts: acts, client: c, porchStatus: &statusAttribute{client: c}, plans: newPlanChunks(c, opts.PlanCheckEvery, opts.PlanGrace)}
	if opts.StatusFile != "" {
		var err error
		if w.status, err = newStatusWriter(opts.StatusFile, acts.NodeName()); err != nil {
			return nil, err
		}
	}
	if err := w.startDefault(c, opts); err != nil {
		return nil, err
	}
	queues, err := serveQueues(c, opts, acts.NodeName())
	if err != nil {
		w.Stop()
		return nil, err
	}
	acts.InstanceTypes, acts.GPUs = instanceLimits(queues)
	for _, q := range queues {
		if err := w.start(c, opts, q, true, false); err != nil {
			return nil, err
		}
	}
	w.announce(opts.Metrics)
	return w, nil
}

// startDefault starts the worker of the default queue when it runs
// workflows or the default compute's steps. A preemptible worker runs the
// steps on the spot variant and workflows, which any worker can pick up
// again, on the default queue itself; a worker standing in for every node
// runs the steps of both.
func (w *Worker) startDefault(c client.Client, opts Options) error {
	acts := slices.Contains(opts.Computes, "")
	if !acts && !opts.Workflows {
		return nil
	}
	if acts && opts.AnyNode {
		if err := w.start(c, opts, queue{name: plan.DefaultTaskQueue}, true, opts.Workflows); err != nil {
			return err
		}
		return w.start(c, opts, queue{name: plan.SpotTaskQueue(plan.DefaultTaskQueue)}, true, false)
	}
	if !acts || !opts.spotQueue(nil, "") {
		return w.start(c, opts, queue{name: plan.DefaultTaskQueue}, acts, opts.Workflows)
	}
	if opts.Workflows {
		if err := w.start(c, opts, queue{name: plan.DefaultTaskQueue}, false, true); err != nil {
			return err
		}
	}
	return w.start(c, opts, queue{name: plan.SpotTaskQueue(plan.DefaultTaskQueue)}, true, false)
}

// serveQueues lists the queues of the options' computes other than the
// default queue (the default compute's are its serverless instance types'),
// sorted, then the node's own queue: a parallel step's resource monitor
// must run on the node it measures.
func serveQueues(c client.Client, opts Options, node string) ([]queue, error) {
	var computes []string
	for _, comp := range opts.Computes {
		if comp != "" && !slices.Contains(computes, comp) {
			computes = append(computes, comp)
		}
	}
	if len(opts.Computes) == 0 {
		return nil, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), startCatalogTimeout)
	defer cancel()
	var cat plan.Catalog
	var err error
	if opts.Catalog != nil {
		cat = *opts.Catalog
	} else if cat, err = workflows.GetCatalog(ctx, c); err != nil {
		return nil, fmt.Errorf("read the porch server's catalogue of computes and instance types: %w", err)
	}
	capacity, err := resolveCapacity(ctx, opts.Capacity)
	if err != nil {
		return nil, err
	}
	labels := opts.Labels
	if opts.AnyNode {
		labels = allSelectors(&cat)
	}
	var out []queue
	for _, comp := range computes {
		qs, err := computeQueues(&cat, comp, opts.InstanceTypes, labels, capacity)
		if err != nil {
			return nil, err
		}
		for i := range qs {
			qs[i].compute = comp
		}
		out = append(out, opts.tierQueues(&cat, comp, qs)...)
	}
	if slices.Contains(opts.Computes, "") {
		qs, err := serverlessQueues(&cat, opts.InstanceTypes, labels, capacity)
		if err != nil {
			return nil, err
		}
		out = append(out, opts.tierQueues(&cat, "", qs)...)
	}
	slices.SortFunc(out, func(a, b queue) int { return strings.Compare(a.name, b.name) })
	pool := newCapacityPool(capacity)
	for i := range out {
		out[i].pool = pool
	}
	return append(out, queue{name: plan.NodeTaskQueue(node)}), nil
}

// resolveCapacity fills what the options leave zero with what this
// machine has.
func resolveCapacity(ctx context.Context, given plan.ResourceList) (plan.ResourceList, error) {
	if given.MilliCPU > 0 && given.MemoryBytes > 0 && given.GPU >= 0 {
		return given, nil
	}
	found, err := DetectCapacity(ctx)
	if err != nil {
		return given, err
	}
	if given.MilliCPU == 0 {
		given.MilliCPU = found.MilliCPU
	}
	if given.MemoryBytes == 0 {
		given.MemoryBytes = found.MemoryBytes
	}
	if given.GPU < 0 {
		given.GPU = found.GPU
	}
	return given, nil
}

// start starts one SDK worker on q, with activities and workflows as asked.
func (w *Worker) start(c client.Client, opts Options, q queue, acts, wfs bool) error {
	wo := sdkworker.Options{
		// A readable build id in the UI and in reset points, rather
		// than a checksum of the binary. Unversioned: the version only
		// names the code, and the server routes tasks as before.
		DeploymentOptions: sdkworker.DeploymentOptions{
			Version: sdkworker.WorkerDeploymentVersion{DeploymentName: "porch", BuildID: opts.BuildID},
		},
		// The node name, as history, the UI and porch compute show name
		// the worker that ran a step.
		Identity: w.acts.NodeName(),
		// The DAG of a plan of thousands of steps does work in proportion
		// to them as an execution starts (the plan decoded, its state
		// restored, a window of steps started): more than the SDK's 1 s
		// guard against workflow code that never yields allows on a
		// loaded machine. A real deadlock still fails the task.
		DeadlockDetectionTimeout: workflowDeadlock,
		// A stall of the server shorter than the heartbeat timeout must
		// not cancel running steps (see steadyHeartbeats).
		Interceptors: []interceptor.WorkerInterceptor{&steadyHeartbeats{client: c, interval: heartbeatInterval}},
	}
	if q.need != nil {
		tuner, err := instanceTuner(q.pool, *q.need)
		if err != nil {
			w.Stop()
			return fmt.Errorf("capacity of task queue %q: %w", q.name, err)
		}
		wo.Tuner = tuner
		// Each poller holds a step's requests while it waits for a task:
		// one per queue keeps that to one step per instance type.
		wo.MaxConcurrentActivityTaskPollers = 1
	} else if opts.Slots > 0 && q.name != plan.DefaultTaskQueue && q.name != plan.NodeTaskQueue(w.acts.NodeName()) {
		// Not the node's own queue: a parallel step's resource monitor
		// there runs beside the step's mini-batches.
		wo.MaxConcurrentActivityExecutionSize = opts.Slots
	}
	if w.status != nil {
		wo.Interceptors = append(wo.Interceptors, w.status.interceptor())
	}
	wo.Interceptors = append(wo.Interceptors, &computeLabel{base: opts.Metrics, compute: q.compute, node: q.name == plan.NodeTaskQueue(w.acts.NodeName()), steps: &w.steps})
	// The SDK polls workflow tasks whatever is registered: a worker
	// serving the default queue's steps alone took the workflows' tasks and
	// failed them ("unable to find workflow type"), delaying each by a
	// retry. The serverless chooser is a local activity of workflow
	// workers: registering it must not make a workflows-only worker take
	// steps.
	wo.DisableWorkflowWorker = !wfs
	wo.LocalActivityWorkerOnly = wfs && !acts
	sw := sdkworker.New(c, q.name, wo)
	if acts {
		w.acts.Register(sw)
	}
	if wfs {
		w.registerWorkflows(sw, c, opts.Catalog, acts)
	}
	if err := sw.Start(); err != nil {
		w.Stop()
		return fmt.Errorf("start worker on task queue %q: %w", q.name, err)
	}
	w.workers = append(w.workers, sw)
	if acts && q.name != plan.NodeTaskQueue(w.acts.NodeName()) {
		w.served = append(w.served, q)
		w.preemptible = w.preemptible || (plan.IsSpotTaskQueue(q.name) && !opts.AnyNode)
	}
	return nil
}

// registry takes workflows and activities, as an SDK worker does.
type registry interface {
	sdkworker.WorkflowRegistry
	sdkworker.ActivityRegistry
}

// registerWorkflows registers porch's workflows and every local activity
// they run, each under its explicit name; withSteps says the worker
// registers the steps' activities too.
func (w *Worker) registerWorkflows(r registry, c client.Client, catalog *plan.Catalog, withSteps bool) {
	workflows.Register(r)
	if !withSteps {
		// A sweep samples its trials in a local activity: without it
		// a workflows-only worker failed every sweep.
		w.acts.RegisterLocal(r)
	}
	(&serverlessChooser{client: c, catalog: catalog}).register(r)
	serverAsks{client: c}.register(r)
	w.porchStatus.register(r)
	w.plans.register(r)
}

// Queues are the task queues whose steps this worker runs, in the order
// it started them (the default queue first).
func (w *Worker) Queues() []string {
	names := make([]string, len(w.served))
	for i, q := range w.served {
		names[i] = q.name
	}
	return names
}

// Node is this worker's node name.
func (w *Worker) Node() string { return w.acts.NodeName() }

// Stop stops every worker, letting running activities see cancellation
// and waiting (up to stopWait) for them to end, then stops the
// entry-script processes of parallel steps (calling their shutdown()).
func (w *Worker) Stop() {
	for _, sw := range w.workers {
		sw.Stop()
	}
	w.workers = nil
	// The SDK's Stop cancels running activities and returns: a canceled
	// step still kills its processes and writes its logs, which must not
	// outlive the worker (a test removing its folders saw them written).
	for deadline := time.Now().Add(stopWait); !w.steps.idle() && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
	}
	if w.acts != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		w.acts.Close(ctx)
	}
}

// workflowClosed says whether a workflow execution is closed, or gone
// (its retention passed); an error says no.
func workflowClosed(c client.Client) func(ctx context.Context, workflowID, runID string) bool {
	return func(ctx context.Context, workflowID, runID string) bool {
		ended, err := workflowEnded(ctx, c, workflowID, runID)
		return err == nil && ended
	}
}

// workflowEnded says whether workflow id's execution runID (its latest for
// "") does not run: it closed, or the server no longer has it.
func workflowEnded(ctx context.Context, c client.Client, id, runID string) (bool, error) {
	d, err := c.DescribeWorkflowExecution(ctx, id, runID)
	var missing *serviceerror.NotFound
	switch {
	case errors.As(err, &missing):
		return true, nil
	case err != nil:
		return false, err
	}
	return d.GetWorkflowExecutionInfo().GetStatus() != enums.WORKFLOW_EXECUTION_STATUS_RUNNING, nil
}

// defaultBuildID is porch@<main module version>, porch@devel for a build
// from a working tree.
func defaultBuildID() string {
	if info, ok := debug.ReadBuildInfo(); ok && info.Main.Version != "" && info.Main.Version != "(devel)" {
		return "porch@" + info.Main.Version
	}
	return "porch@devel"
}
