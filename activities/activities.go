// Package activities registers a porch worker's activities: one package
// per step kind (command, parallel, sweep, and spread for the instances of
// steps spread over workers), all over the shared step I/O of stepio.
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
	"path/filepath"
	"sync"
	"time"

	"go.temporal.io/sdk/worker"

	"github.com/porch-pipelines/porch/activities/command"
	"github.com/porch-pipelines/porch/activities/launch"
	"github.com/porch-pipelines/porch/activities/limits"
	"github.com/porch-pipelines/porch/activities/parallel"
	"github.com/porch-pipelines/porch/activities/reuse"
	"github.com/porch-pipelines/porch/activities/runrecord"
	"github.com/porch-pipelines/porch/activities/spread"
	"github.com/porch-pipelines/porch/activities/stepio"
	"github.com/porch-pipelines/porch/activities/sweep"
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
	// Python is the worker's Python: every step's python and python3,
	// and the interpreter of entry scripts; "" means python3 on PATH.
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

	// WorkflowClosed says whether a workflow execution is closed: a
	// command step's command that moved out of its local activity, and
	// waits for an activity to follow it, asks about its workflow.
	WorkflowClosed func(ctx context.Context, workflowID, runID string) bool

	// InstanceTypes are the instance types of the task queues this
	// worker serves, by queue (plan.InstanceTaskQueue): a step from one
	// runs each instance within its type's limits (see package limits).
	InstanceTypes map[string]plan.InstanceType
	// GPUs is how many GPUs the worker offers, numbered from 0 as
	// CUDA_VISIBLE_DEVICES counts them.
	GPUs int64
	// Runtime is where steps with an environment run: the host (the
	// zero Runtime) or containers through podman or docker.
	Runtime launch.Runtime

	once     sync.Once
	command  *command.Activities
	parallel *parallel.Activities
	spread   *spread.Activities
	sweep    *sweep.Activities
	reuse    *reuse.Activities
	records  *runrecord.Activities
}

// init builds each step kind's activities over one step I/O and one set
// of devices, from the fields as they are at the first registration.
func (a *Activities) init() {
	a.once.Do(func() {
		h := &stepio.Host{Home: a.Home, HeartbeatInterval: a.HeartbeatInterval, KillGrace: a.KillGrace, Node: a.Node,
			DisableMounts: a.DisableMounts, Datastores: a.Datastores, Interpreter: a.Python, Runtime: a.Runtime}
		d := limits.NewDevices(a.InstanceTypes, a.GPUs)
		a.command = &command.Activities{Host: h, Devices: d, WorkflowClosed: a.WorkflowClosed}
		a.parallel = &parallel.Activities{Host: h, Devices: d, Python: a.Python, IdleShutdown: a.IdleShutdown}
		a.spread = &spread.Activities{Host: h, Address: a.Address, Signal: a.Signal}
		a.sweep = &sweep.Activities{Host: h}
		a.reuse = &reuse.Activities{Host: h, Hasher: &reuse.Hasher{Dir: filepath.Join(a.Home, "cache", "reuse")}}
		a.records = &runrecord.Activities{Host: h}
	})
}

// Register registers the activities under their explicit names.
func (a *Activities) Register(r worker.ActivityRegistry) {
	a.init()
	a.command.Register(r)
	a.parallel.Register(r)
	a.spread.Register(r)
	a.sweep.Register(r)
	a.reuse.Register(r)
	a.records.Register(r)
}

// RegisterLocal registers the activities porch's workflows run as local
// activities, for a worker that runs workflows without steps.
func (a *Activities) RegisterLocal(r worker.ActivityRegistry) {
	a.init()
	a.sweep.RegisterLocal(r)
	reuse.RegisterElsewhere(r)
	command.RegisterElsewhere(r)
}

// NodeName names this worker in parallel steps' logs and in its own task
// queue (plan.NodeTaskQueue): Node, else the host name and the
// process id.
func (a *Activities) NodeName() string { return (&stepio.Host{Node: a.Node}).NodeName() }

// Close stops every entry-script process this worker started, and every
// command a local activity started that runs on.
func (a *Activities) Close(ctx context.Context) {
	if a.command != nil {
		a.command.StopMoved()
	}
	if a.parallel != nil {
		a.parallel.Close(ctx)
	}
}
