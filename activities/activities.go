// Package activities does a porch worker's I/O: it runs command steps as
// real processes on the worker's host, in real folders.
//
// A step's files follow Azure ML's layout, under the porch home:
//
//	<home>/datastores/<ds>/azureml/<run>/<step>/artifacts/   the step's artifacts (outputs/, logs/, user_logs/)
//	<home>/datastores/<ds>/azureml/<run>/<step>/<output>/    a default output location
//	<home>/work/<run>/<step>/                                the working folder the command runs in
//
// A user's mistake (a missing input, a bad path, a command that exits
// non-zero) is a non-retryable application error whose message says what to
// fix; a failure of the host (disk, copy) is retryable.
package activities

import (
	"context"
	"net/http"
	"sync"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/worker"

	"github.com/porch-pipelines/porch/activities/codesnapshot"
	"github.com/porch-pipelines/porch/compiler/plan"
)

// Activities holds what porch's activities need on a worker.
type Activities struct {
	// Home is the porch home folder (the CLI resolves PORCH_HOME or
	// ~/.porch); datastores and working folders live under it.
	Home string
	// HeartbeatInterval is how often a running command heartbeats; 0 means
	// 5 seconds.
	HeartbeatInterval time.Duration
	// KillGrace is how long a stopped command may take to exit after
	// SIGTERM before porch sends SIGKILL; 0 means 5 seconds.
	KillGrace time.Duration
	// Python is the interpreter that hosts parallel entry scripts; "" means
	// python3 on PATH.
	Python string
	// Node names this worker in parallel steps' logs and its own task
	// queue (NodeTaskQueue); "" means <hostname>-<pid>.
	Node string
	// Address is where other workers reach this one (a distributed
	// step's instance 0 listens there); "" means the host's first
	// non-loopback IPv4 address.
	Address string
	// IdleShutdown is how long a parallel step's entry-script processes
	// may sit unused before they are shut down; 0 means 30 seconds.
	IdleShutdown time.Duration

	// DisableMounts makes ro_mount inputs on s3 datastores download into
	// the working folder, as where FUSE is not available, instead of
	// mounting them.
	DisableMounts bool

	// Datastores reads the registered datastores (the server's catalogue);
	// nil means none: every datastore is a folder under Home. A worker
	// re-reads them every few seconds.
	Datastores func(ctx context.Context) ([]plan.Datastore, error)

	// Signal sends a signal to a workflow run (client.SignalWorkflow):
	// HoldInstance tells its parallel step where it holds an instance.
	Signal func(ctx context.Context, workflowID, runID, name string, arg any) error

	// InstanceTypes are the instance types of the task queues this
	// worker serves, by queue (plan.InstanceTaskQueue): a step from one
	// runs each instance within its type's limits (see limits.go).
	InstanceTypes map[string]plan.InstanceType
	// GPUs is how many GPUs the worker offers, numbered from 0 as
	// CUDA_VISIBLE_DEVICES counts them.
	GPUs int64

	// transport carries this worker's requests to object stores; nil is
	// the default. Tests count requests with it.
	transport http.RoundTripper

	parallelOnce sync.Once
	deadMounts   sync.Once
	runtimes     *runtimes
	stores       datastores
	objects      objectStores
	// snapshots are the code snapshots fetched from object storage, under
	// Home/cache/code.
	snapshots     codesnapshot.Cache
	snapshotsOnce sync.Once
	// hostDevices are handed out to running instances.
	devicesOnce sync.Once
	hostDevices *devices
}

// Register registers the activities under their explicit names.
func (a *Activities) Register(r worker.ActivityRegistry) {
	r.RegisterActivityWithOptions(a.RunCommand, activity.RegisterOptions{Name: RunCommandName})
	r.RegisterActivityWithOptions(a.PlanMiniBatches, activity.RegisterOptions{Name: PlanMiniBatchesName})
	r.RegisterActivityWithOptions(a.RunMiniBatch, activity.RegisterOptions{Name: RunMiniBatchName})
	r.RegisterActivityWithOptions(a.ListPendingMiniBatches, activity.RegisterOptions{Name: ListPendingMiniBatchesName})
	r.RegisterActivityWithOptions(a.ReportParallelProgress, activity.RegisterOptions{Name: ReportParallelProgressName})
	r.RegisterActivityWithOptions(a.FinishParallel, activity.RegisterOptions{Name: FinishParallelName})
	r.RegisterActivityWithOptions(a.MonitorResources, activity.RegisterOptions{Name: MonitorResourcesName})
	r.RegisterActivityWithOptions(a.HoldInstance, activity.RegisterOptions{Name: HoldInstanceName})
	r.RegisterActivityWithOptions(a.SampleTrials, activity.RegisterOptions{Name: SampleTrialsName})
	r.RegisterActivityWithOptions(a.ReadTrialMetrics, activity.RegisterOptions{Name: ReadTrialMetricsName})
	r.RegisterActivityWithOptions(a.FinishSweep, activity.RegisterOptions{Name: FinishSweepName})
}

// devices are the worker's cores and GPUs.
func (a *Activities) devices() *devices {
	a.devicesOnce.Do(func() { a.hostDevices = newDevices(a.InstanceTypes, a.GPUs) })
	return a.hostDevices
}
