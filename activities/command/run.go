package command

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/porch-pipelines/porch/activities/launch"
	"github.com/porch-pipelines/porch/activities/metrics"
	"github.com/porch-pipelines/porch/activities/redact"
	"github.com/porch-pipelines/porch/activities/stepio"
	"go.temporal.io/sdk/temporal"
)

// stepRun is one attempt of a command step.
type stepRun struct {
	in      RunCommandInput
	folders stepio.Folders
	attempt int32
	// python is the worker's Python, the step's python and python3.
	python stepio.StepPython
	// image is the image the step's processes run in, nil on the host;
	// rt the runtime that runs them.
	image *launch.Image
	rt    launch.Runtime
	// envNote says why the step's environment is not applied, "" when it
	// is or it has none.
	envNote string
}

// mainLog is the step's std_log.txt.
func (r stepRun) mainLog() string { return filepath.Join(r.folders.UserLogs(), "std_log.txt") }

// processLog is the log of process i of a distributed step (Azure's naming).
func (r stepRun) processLog(i int) string {
	return filepath.Join(r.folders.UserLogs(), "std_log_process_"+strconv.Itoa(i)+".txt")
}

// header is the first lines of the step's log: what porch runs, and where.
func (r stepRun) header(line string, notes []string) []string {
	host, err := os.Hostname()
	if err != nil {
		host = "unknown"
	}
	lines := []string{fmt.Sprintf("porch: step %q of run %q, attempt %d, on host %q", r.in.StepPath, r.in.RunID, r.attempt, host)}
	if r.envNote != "" {
		lines = append(lines, r.envNote)
	}
	if r.python.Note != "" && r.image == nil {
		lines = append(lines, r.python.Note)
	}
	lines = append(lines, notes...)
	return append(lines, "porch: working folder "+r.folders.Work, "porch: command: "+line)
}

// specs are the step's processes, with the metrics file and porch's mlflow
// module in their environment. A distributed step's std_log.txt says what
// runs and each process logs to its own file.
func (r stepRun) specs(line string, env []string, procs []process, notes []string, mounts []launch.Mount) ([]procSpec, error) {
	if r.image == nil {
		env, notes = r.withMetrics(env, notes)
	}
	secrets := redact.Secrets(r.in.Command.Identity)
	if len(procs) == 1 && r.in.Instance == nil {
		s := procSpec{line: line, dir: r.folders.Work, env: slices.Concat(env, procs[0].env), log: r.mainLog(),
			secrets: secrets, rt: r.rt}
		if r.image != nil {
			s.container = r.container(0, false, s.env, mounts)
			notes = append(notes, r.containerNote(r.rt, []procSpec{s}))
		}
		s.header = r.header(line, notes)
		return []procSpec{s}, nil
	}
	specs := make([]procSpec, len(procs))
	for i, p := range procs {
		specs[i] = procSpec{
			line:    line,
			dir:     r.folders.Work,
			env:     slices.Concat(env, p.env),
			log:     r.processLog(p.rank),
			secrets: secrets,
			rt:      r.rt,
			header: []string{
				fmt.Sprintf("porch: step %q process %d (%s): %s", r.in.StepPath, p.rank, p.label, strings.Join(p.env, " ")),
				"porch: command: " + line,
			},
		}
		if r.image != nil {
			specs[i].container = r.container(p.rank, true, specs[i].env, mounts)
		}
	}
	if r.image != nil {
		notes = append(notes, r.containerNote(r.rt, specs))
	}
	header := r.header(line, notes)
	header = append(header, "porch: process <i> logs to user_logs/std_log_process_<i>.txt")
	if err := stepio.AppendLog(r.mainLog(), header...); err != nil {
		return nil, fmt.Errorf("write step log: %w", err)
	}
	return specs, nil
}

// runOutcome is how a step's processes ended.
type runOutcome struct {
	results []procResult
	errs    []error
	// failed is the first process that failed or could not run, -1 for none.
	failed int
}

// runAll runs the processes at once. The first to fail stops the others.
func runAll(ctx context.Context, specs []procSpec, grace time.Duration) runOutcome {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	out := runOutcome{results: make([]procResult, len(specs)), errs: make([]error, len(specs)), failed: -1}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i := range specs {
		wg.Go(func() {
			res, err := runProcess(ctx, specs[i], grace)
			mu.Lock()
			out.results[i], out.errs[i] = res, err
			first := (err != nil || !res.state.Success()) && out.failed < 0
			if first {
				out.failed = i
			}
			mu.Unlock()
			if first {
				cancel()
			}
		})
	}
	wg.Wait()
	return out
}

// outcome turns how the processes ended into the activity's error, and
// ends the step's log with it. nil means every process succeeded.
func (r stepRun) outcome(ctx, runCtx context.Context, procs []process, specs []procSpec, out runOutcome) error {
	for i, res := range out.results {
		if res.leftovers > 0 {
			_ = stepio.AppendLog(specs[i].log, fmt.Sprintf("porch: stopped %d background processes the command left running", res.leftovers))
		}
	}
	if err := stepio.Stopped(ctx); err != nil {
		_ = stepio.AppendLog(r.mainLog(), fmt.Sprintf("porch: the step was stopped (%v): porch stopped its processes", err))
		return err
	}
	for i, err := range out.errs {
		if err != nil {
			return fmt.Errorf("step %q, %s: %w", r.in.StepPath, describe(procs, i), err)
		}
	}
	timedOut := errors.Is(runCtx.Err(), context.DeadlineExceeded)
	if out.failed < 0 && !timedOut {
		return nil
	}
	i := max(out.failed, 0)
	res := out.results[i]
	code, desc := exitDescription(res.state)
	errType := CommandFailedType
	if timedOut {
		errType = CommandTimedOutType
		desc = fmt.Sprintf("command ran longer than its limits.timeout of %ds and was stopped: raise limits.timeout or make the command faster", r.in.Command.TimeoutSeconds)
	}
	if len(specs) > 1 {
		desc = fmt.Sprintf("process %d (%s): %s; porch stopped the other processes", i, procs[i].label, desc)
	}
	_ = stepio.AppendLog(r.mainLog(), "porch: "+desc)
	msg := desc
	if len(res.tail) > 0 {
		msg += "\n" + strings.Join(res.tail, "\n")
	}
	return temporal.NewNonRetryableApplicationError(msg, errType, nil,
		CommandFailure{ExitCode: code, StderrTail: res.tail, LogFile: specs[i].log, Attempt: r.attempt})
}

// describe names process i for messages.
func describe(procs []process, i int) string {
	if len(procs) == 1 {
		return "command"
	}
	return fmt.Sprintf("process %d (%s)", i, procs[i].label)
}

// withMetrics adds the variables of trial metrics to a step's environment:
// PORCH_METRICS_FILE, metrics.jsonl in the artifacts folder, and porch's
// mlflow module on PYTHONPATH when the step's Python (the worker's, its
// python3) has no mlflow of its own. Only Python scripts that import
// mlflow need the module, so failing to provide it is a note in the step's
// log, not a failed step.
func (r stepRun) withMetrics(env, notes []string) ([]string, []string) {
	python := r.python.Exe
	file := filepath.Join(r.folders.Artifacts, metrics.FileName)
	out, err := metrics.Extend(env, python, file, "")
	switch {
	case err != nil:
		notes = append(notes, fmt.Sprintf("porch: porch's mlflow module is not available to the step (%v): scripts that import mlflow fail unless %s has mlflow", err, python))
	case len(out) > len(env)+1:
		notes = append(notes, fmt.Sprintf("porch: %s has no mlflow: porch's mlflow module is on PYTHONPATH and records what the script logs in %s", python, file))
	}
	return out, notes
}
