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
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"

	"github.com/porch-pipelines/porch/activities/codesnapshot"
	"github.com/porch-pipelines/porch/activities/objectstore/lazyfs"
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
	// cores and gpus are handed out to running instances.
	devicesOnce sync.Once
	cores, gpus *deviceSet
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

func (a *Activities) heartbeatInterval() time.Duration {
	if a.HeartbeatInterval > 0 {
		return a.HeartbeatInterval
	}
	return 5 * time.Second
}

func (a *Activities) killGrace() time.Duration {
	if a.KillGrace > 0 {
		return a.KillGrace
	}
	return 5 * time.Second
}

// invalidStep is a user's mistake: never retried, the message says what to
// fix.
func invalidStep(format string, args ...any) error {
	return temporal.NewNonRetryableApplicationError(fmt.Sprintf(format, args...), InvalidStepType, nil)
}

// RunCommand runs one command step on this host: it prepares the step's
// folders, renders the command with the step's inputs and outputs, runs it
// (once, or once per process of a distribution) and reports where the
// outputs landed. The command's output goes to the artifacts folder's
// user_logs/. Cancelling ctx stops every process of the step.
func (a *Activities) RunCommand(ctx context.Context, in RunCommandInput) (RunCommandResult, error) {
	if a.Home == "" {
		return RunCommandResult{}, temporal.NewNonRetryableApplicationError(
			"the worker has no porch home folder: set PORCH_HOME or Activities.Home", "WorkerMisconfigured", nil)
	}
	a.refreshDatastores(ctx)
	// Inputs mounted by a worker of this home that died, for steps that
	// may never run here again: the first step clears them.
	a.deadMounts.Do(func() { _, _ = lazyfs.DetachDead(filepath.Join(a.Home, "work")) })
	// Fetching the code snapshot and downloading inputs on object storage
	// can take long: heartbeat through them.
	stopPrep := a.beatWhile(ctx, func() any { return "preparing code and inputs" })
	f, err := a.prepareFolders(ctx, in)
	if err != nil {
		stopPrep()
		return RunCommandResult{}, err
	}
	b, err := a.bind(ctx, in, f)
	stopPrep()
	if err != nil {
		return RunCommandResult{}, err
	}
	// Mounted inputs go when the step ends, however it ends; a worker that
	// dies first leaves them to the next attempt's prepareFolders.
	defer func() {
		if problems := b.mounts.unmount(); len(problems) > 0 {
			_ = appendLog(filepath.Join(f.userLogs(), "std_log.txt"), problems...)
		}
	}()
	line, err := b.render(in)
	if err != nil {
		return RunCommandResult{}, err
	}
	procs, notes, err := distribute(in)
	if err != nil {
		return RunCommandResult{}, err
	}
	attempt := int32(1)
	if activity.IsActivity(ctx) {
		attempt = activity.GetInfo(ctx).Attempt
	}
	attempt += in.PriorAttempts
	r := stepRun{in: in, folders: f, attempt: attempt}
	env, idNote := b.env(in)
	if idNote != "" {
		notes = append(notes, idNote)
	}
	lim := a.limitStep(ctx, in, procs)
	specs, err := r.specs(line, env, procs, slices.Concat(in.Notes, b.mounts.notes, notes, lim.notes))
	if err != nil {
		lim.release()
		return RunCommandResult{}, err
	}
	lim.apply(specs, procs)
	runCtx, cancel := limitContext(ctx, in.Command.TimeoutSeconds)
	defer cancel()
	// The details are the bytes logged so far.
	stopBeats := a.beatWhile(ctx, func() any { return loggedBytes(specs) })
	stopWatch := watchMemory(lim.guards(), memorySampleInterval)
	out := runAll(runCtx, specs, a.killGrace())
	stopWatch()
	stopBeats()
	lim.release()
	err = r.memoryExceeded(lim, specs)
	if err == nil || ctx.Err() != nil {
		err = r.outcome(ctx, runCtx, procs, specs, out)
	}
	// Every instance of a step spread over workers writes the same
	// outputs; the first uploads them.
	if err == nil && (in.Instance == nil || in.Instance.Index == 0) {
		err = a.uploadOutputs(ctx, r, b.uploads)
	}
	// The logs go to the object store after the step's last line is
	// written, whether it succeeded or not.
	a.uploadLogs(ctx, in.StepPath, f)
	if err != nil {
		return RunCommandResult{}, err
	}
	return RunCommandResult{WorkDir: f.work, LogDir: f.artifacts, Outputs: b.outputs, Attempt: attempt}, nil
}

// uploadOutputs copies a succeeded step's outputs on s3 datastores, and
// ends the step's log with the reason when that fails.
func (a *Activities) uploadOutputs(ctx context.Context, r stepRun, ups []upload) error {
	stop := a.beatWhile(ctx, func() any { return "uploading outputs" })
	err := a.commitUploads(ctx, r.in.StepPath, ups)
	stop()
	if err != nil {
		_ = appendLog(r.mainLog(), "porch: "+err.Error())
	}
	return err
}

// limitContext enforces the step's limits.timeout, when it has one.
func limitContext(ctx context.Context, seconds int) (context.Context, context.CancelFunc) {
	if seconds <= 0 {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, time.Duration(seconds)*time.Second)
}

// beatWhile records a heartbeat with details() every heartbeat interval
// until the returned function is called.
func (a *Activities) beatWhile(ctx context.Context, details func() any) (stop func()) {
	if !activity.IsActivity(ctx) {
		return func() {}
	}
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		tick := time.NewTicker(a.heartbeatInterval())
		defer tick.Stop()
		for {
			select {
			case <-tick.C:
				activity.RecordHeartbeat(ctx, details())
			case <-done:
				return
			}
		}
	}()
	return func() {
		close(done)
		<-finished
	}
}

// loggedBytes is the size of the step's process logs.
func loggedBytes(specs []procSpec) int64 {
	var n int64
	for _, s := range specs {
		if info, err := os.Stat(s.log); err == nil {
			n += info.Size()
		}
	}
	return n
}
