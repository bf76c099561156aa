// Package worker wires porch's workflows and activities onto task queues: the
// default queue runs workflows (and the steps of the default compute), and
// each compute target is a task queue of its own.
package worker

import (
	"context"
	"fmt"
	"os"
	"runtime/debug"
	"slices"
	"sort"
	"time"

	"go.temporal.io/sdk/client"
	sdkworker "go.temporal.io/sdk/worker"

	"github.com/porch-pipelines/porch/activities"
	"github.com/porch-pipelines/porch/compiler/plan"
	"github.com/porch-pipelines/porch/workflows"
)

// heartbeatThrottle is how often heartbeats actually reach the server. The
// SDK's default (up to 0.8 of the heartbeat timeout) would delay a cancel,
// and with it the kill of a step's processes, by many seconds.
const heartbeatThrottle = time.Second

// catalogTimeout bounds reading the server's catalogue of datastores; a
// worker keeps its last copy when it cannot.
const catalogTimeout = 5 * time.Second

// Options says what a worker serves.
type Options struct {
	// Home is the porch home (datastores, working folders).
	Home string
	// Computes are the compute names whose task queues this worker serves
	// activities on; "" is the default queue.
	Computes []string
	// Workflows also runs porch's workflows on the default queue.
	Workflows bool
	// BuildID names this worker's code in workflow histories; "" means
	// porch@<module version>.
	BuildID string
	// Python is the interpreter that hosts parallel steps' entry scripts;
	// "" means $PORCH_PYTHON, else python3 on PATH.
	Python string
	// Node names this worker in parallel steps' logs and resource
	// monitors; "" means <hostname>-<pid>.
	Node string
	// Datastores reads the registered datastores; nil means the catalogue
	// of the server the worker's client is connected to. An embedded
	// `porch run` gives the catalogue of the running `porch dev`.
	Datastores func(ctx context.Context) ([]plan.Datastore, error)
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
	acts    *activities.Activities
}

// Start starts workers for every queue the options name.
func Start(c client.Client, opts Options) (*Worker, error) {
	queues := map[string]bool{}
	for _, comp := range opts.Computes {
		queues[plan.TaskQueue(comp)] = true
	}
	if opts.Workflows {
		queues[plan.DefaultTaskQueue] = true
	}
	if len(queues) == 0 {
		return nil, fmt.Errorf("a worker needs a compute to serve or --workflows")
	}
	names := make([]string, 0, len(queues))
	for q := range queues {
		names = append(names, q)
	}
	sort.Strings(names)

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
		Home: opts.Home, HeartbeatInterval: heartbeatThrottle, Python: opts.Python, Node: opts.Node,
		Datastores: func(ctx context.Context) ([]plan.Datastore, error) {
			ctx, cancel := context.WithTimeout(ctx, catalogTimeout)
			defer cancel()
			return datastores(ctx)
		},
	}
	w := &Worker{acts: acts}
	serves := len(opts.Computes) > 0
	if serves {
		// The node's own queue: a parallel step's resource monitor must run
		// on the node it measures.
		names = append(names, activities.NodeTaskQueue(acts.NodeName()))
	}
	for _, q := range names {
		sw := sdkworker.New(c, q, sdkworker.Options{
			// A readable build id in the UI and in reset points, rather
			// than a checksum of the binary.
			BuildID: opts.BuildID,
			// The node name, as history, the UI and porch compute show
			// name the worker that ran a step.
			Identity:                         acts.NodeName(),
			MaxHeartbeatThrottleInterval:     heartbeatThrottle,
			DefaultHeartbeatThrottleInterval: heartbeatThrottle,
		})
		if q != plan.DefaultTaskQueue || slices.Contains(opts.Computes, "") {
			acts.Register(sw)
		}
		if q == plan.DefaultTaskQueue && opts.Workflows {
			workflows.Register(sw)
		}
		if err := sw.Start(); err != nil {
			w.Stop()
			return nil, fmt.Errorf("start worker on task queue %q: %w", q, err)
		}
		w.workers = append(w.workers, sw)
	}
	return w, nil
}

// Node is this worker's node name.
func (w *Worker) Node() string { return w.acts.NodeName() }

// Stop stops every worker, letting running activities see cancellation,
// then stops the entry-script processes of parallel steps (calling their
// shutdown()).
func (w *Worker) Stop() {
	for _, sw := range w.workers {
		sw.Stop()
	}
	w.workers = nil
	if w.acts != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		w.acts.Close(ctx)
	}
}

// defaultBuildID is porch@<main module version>, porch@devel for a build
// from a working tree.
func defaultBuildID() string {
	if info, ok := debug.ReadBuildInfo(); ok && info.Main.Version != "" && info.Main.Version != "(devel)" {
		return "porch@" + info.Main.Version
	}
	return "porch@devel"
}
