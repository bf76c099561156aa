package command

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/porch-pipelines/porch/activities/launch"
	"github.com/porch-pipelines/porch/activities/limits"
	"github.com/porch-pipelines/porch/activities/metrics"
	"github.com/porch-pipelines/porch/activities/stepio"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"
)

// Activities are the activities of command steps on one worker.
type Activities struct {
	*stepio.Host
	// Devices are the worker's cores and GPUs, shared with the other step
	// kinds' instances.
	Devices *limits.Devices

	// WorkflowClosed says whether a workflow execution is closed; nil
	// never says so. A command that moved out of its local activity asks
	// it while no activity follows it.
	WorkflowClosed func(ctx context.Context, workflowID, runID string) bool

	// moved are the commands that moved out of their local activity,
	// until they end.
	moved movedCommands
}

// Register registers the activities of command steps under their
// explicit names.
func (a *Activities) Register(r worker.ActivityRegistry) {
	r.RegisterActivityWithOptions(a.RunCommand, activity.RegisterOptions{Name: RunCommandName})
}

// RegisterElsewhere registers, for a worker that runs workflows without
// steps, a RunCommand that declines to run a command as a local activity:
// the step then schedules its command for a worker of its queue.
func RegisterElsewhere(r worker.ActivityRegistry) {
	r.RegisterActivityWithOptions(declineHere, activity.RegisterOptions{Name: RunCommandName})
}

// RunCommand runs one command step on this host: it prepares the step's
// folders, renders the command with the step's inputs and outputs, runs it
// (once, or once per process of a distribution) and reports where the
// outputs landed. The command's output goes to the artifacts folder's
// user_logs/. Cancelling ctx stops every process of the step.
//
// As a local activity it runs the command for at most hereBudget, and
// moves it when it runs on; with in.Follow it follows a command that
// moved (see here.go).
func (a *Activities) RunCommand(ctx context.Context, in RunCommandInput) (RunCommandResult, error) {
	switch {
	case in.Follow != "":
		return a.follow(ctx, in.Follow)
	case activity.IsActivity(ctx) && activity.GetInfo(ctx).IsLocalActivity:
		return a.runHere(ctx, in)
	}
	return a.run(ctx, in)
}

// run runs the step's command to its end.
func (a *Activities) run(ctx context.Context, in RunCommandInput) (RunCommandResult, error) {
	if a.Home == "" {
		return RunCommandResult{}, temporal.NewNonRetryableApplicationError(
			"the worker has no porch home folder: set PORCH_HOME or Activities.Home", "WorkerMisconfigured", nil)
	}
	a.RefreshDatastores(ctx, stepio.DataURIs(in.Inputs, in.Outputs)...)
	// Inputs mounted by a worker of this home that died, for steps that
	// may never run here again: the first step clears them.
	a.DetachDeadMounts()
	// An abandoned attempt of the step on this worker (its execution
	// reset, or timed out) stops before this one clears its folders.
	unlock, err := a.LockStep(ctx, in.Step, instanceIndex(in), in.Instance != nil)
	if err != nil {
		return RunCommandResult{}, err
	}
	defer unlock()
	// Fetching the code snapshot and downloading inputs on object storage
	// can take long: heartbeat through them.
	stopPrep := a.BeatWhile(ctx, func() any { return stepio.Beat{Phase: "preparing code and inputs"} })
	f, err := a.PrepareFolders(ctx, in.Step, instanceIndex(in), in.Instance != nil)
	if err != nil {
		stopPrep()
		return RunCommandResult{}, a.failedToStart(ctx, in, f, stepAttempt(ctx, in), err)
	}
	attempt := stepAttempt(ctx, in)
	if in.Instance == nil {
		// The instances of a step spread over workers write their shares
		// of the outputs side by side, as before; a step on one worker
		// stages them.
		f.Attempt = strconv.Itoa(int(attempt))
		f.Execution = path.Join(in.RunID, executionID(ctx))
	}
	b, err := a.Bind(ctx, in.Step, f)
	stopPrep()
	if err != nil {
		return RunCommandResult{}, a.failedToStart(ctx, in, f, attempt, err)
	}
	// Mounted inputs go when the step ends, however it ends; a worker that
	// dies first leaves them to the next attempt's prepareFolders.
	defer func() {
		if problems := b.Mounts.Unmount(); len(problems) > 0 {
			_ = stepio.AppendLog(filepath.Join(f.UserLogs(), "std_log.txt"), problems...)
		}
	}()
	line, err := b.Render(in.Step)
	if err != nil {
		return RunCommandResult{}, a.failedToStart(ctx, in, f, attempt, err)
	}
	procs, notes, err := distribute(in)
	if err != nil {
		return RunCommandResult{}, a.failedToStart(ctx, in, f, attempt, err)
	}
	r := stepRun{in: in, folders: f, attempt: attempt, python: b.Python, rt: a.Runtime}
	if r.image, r.envNote, err = a.environment(ctx, &r); err != nil {
		a.UploadLogs(ctx, in.StepPath, f)
		return RunCommandResult{}, err
	}
	env, mounts, notes := a.processEnv(ctx, r, &b, notes)
	lim := a.limitStep(ctx, in, procs)
	specs, err := r.specs(line, env, procs, slices.Concat(in.Notes, b.Notes(), notes, lim.Notes), mounts)
	if err != nil {
		lim.Release()
		return RunCommandResult{}, a.failedToStart(ctx, in, f, attempt, err)
	}
	lim.apply(specs, procs)
	runCtx, cancel := limitContext(ctx, in.Command.TimeoutSeconds)
	defer cancel()
	// The details say how much the processes have logged so far.
	stopBeats := a.BeatWhile(ctx, func() any { return stepio.Beat{Phase: "running", LoggedBytes: loggedBytes(specs)} })
	stopWatch := watchMemory(lim.watched(), memorySampleInterval)
	out := runAll(runCtx, specs, a.StopGrace())
	stopWatch()
	stopBeats()
	lim.Release()
	err = r.memoryExceeded(lim, specs)
	if err == nil || ctx.Err() != nil {
		err = r.outcome(ctx, runCtx, procs, specs, out)
	}
	err = a.commitOutputs(ctx, r, b, err)
	// The logs go to the object store after the step's last line is
	// written, whether it succeeded or not.
	a.UploadLogs(ctx, in.StepPath, f)
	if err != nil {
		return RunCommandResult{}, err
	}
	res := RunCommandResult{WorkDir: f.Work, LogDir: f.Artifacts, Outputs: b.Outputs, Attempt: attempt, EnvironmentNote: strings.TrimPrefix(r.envNote, "porch: ")}
	if r.image != nil {
		res.Image = r.image
	}
	return res, nil
}

// processEnv is what the step's processes see: their variables, the
// host folders bound into their container (none on the host), and the
// notes for the step's log with the one on its identity.
func (a *Activities) processEnv(ctx context.Context, r stepRun, b *stepio.Bindings, notes []string) ([]string, []launch.Mount, []string) {
	var env []string
	var idNote string
	var mounts []launch.Mount
	if r.image != nil {
		env, idNote = b.ContainerEnv(r.in.Step)
		env, notes = a.containerEnv(ctx, r, env, notes)
		shim, _ := metrics.ShimDir("")
		mounts = b.ContainerMounts(r.in.Step, r.folders, shim)
	} else {
		b.Python = r.python
		env, idNote = b.Env(r.in.Step)
	}
	if idNote != "" {
		notes = append(notes, idNote)
	}
	return env, mounts, notes
}

// failedToStart writes why a step failed before its command started
// into the step's log, the log porch names when the step fails, and copies
// it to an object store as a finished step's log is. It returns err.
func (a *Activities) failedToStart(ctx context.Context, in RunCommandInput, f stepio.Folders, attempt int32, err error) error {
	if f.Artifacts == "" {
		return err
	}
	log := filepath.Join(f.UserLogs(), "std_log.txt")
	if os.MkdirAll(f.UserLogs(), 0o755) != nil {
		return err
	}
	msg := err.Error()
	var ae *temporal.ApplicationError
	if errors.As(err, &ae) {
		msg = ae.Message()
	}
	_ = stepio.AppendLog(log, fmt.Sprintf("porch: step %q of run %q, attempt %d, failed before its command started: %s",
		in.StepPath, in.RunID, attempt, msg))
	a.UploadLogs(ctx, in.StepPath, f)
	return err
}

// commitOutputs publishes the outputs of an attempt that succeeded (runErr
// nil): those on local datastores move from staging into place, those on
// s3 datastores are uploaded. Every instance of a step spread over
// workers writes the same outputs; the first commits them. What an
// attempt that failed staged is removed. The step's log ends with the
// reason when committing fails.
func (a *Activities) commitOutputs(ctx context.Context, r stepRun, b stepio.Bindings, runErr error) error {
	if runErr != nil || (r.in.Instance != nil && r.in.Instance.Index != 0) {
		b.Discard()
		return runErr
	}
	stop := a.BeatWhile(ctx, func() any { return stepio.Beat{Phase: "publishing outputs"} })
	err := b.Publish()
	if err == nil {
		err = a.CommitUploads(ctx, r.in.StepPath, b.Uploads)
	} else {
		b.Discard()
	}
	stop()
	if err != nil {
		_ = stepio.AppendLog(r.mainLog(), "porch: "+err.Error())
	}
	return err
}

// stepAttempt is the step's attempt number (1-based): the activity's
// attempt, after the attempts the workflow made before it.
func stepAttempt(ctx context.Context, in RunCommandInput) int32 {
	attempt := int32(1)
	if activity.IsActivity(ctx) {
		attempt = activity.GetInfo(ctx).Attempt
	}
	return attempt + in.PriorAttempts
}

// executionID is the step execution the activity runs for: its workflow's
// run id ("local" outside Temporal).
func executionID(ctx context.Context) string {
	if activity.IsActivity(ctx) {
		if id := activity.GetInfo(ctx).WorkflowExecution.RunID; id != "" {
			return id
		}
	}
	return "local"
}

// limitContext enforces the step's limits.timeout, when it has one.
func limitContext(ctx context.Context, seconds int) (context.Context, context.CancelFunc) {
	if seconds <= 0 {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, time.Duration(seconds)*time.Second)
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

// instanceIndex is the instance a step spread over workers runs here, 0
// for a step that runs every instance on this host.
func instanceIndex(in RunCommandInput) int {
	if in.Instance == nil {
		return 0
	}
	return in.Instance.Index
}
