package cli

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/porch-pipelines/porch/activities/command"
	"github.com/porch-pipelines/porch/activities/parallel"
	"github.com/porch-pipelines/porch/compiler/plan"
	"github.com/porch-pipelines/porch/workflows"
	enums "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
)

// report prints how a watched run ended and returns the command's error.
func (a *app) report(ctx context.Context, sess *session, runID, datastore string, took time.Duration, out watchOutcome) error {
	if out.err == nil {
		fmt.Fprintf(a.stdout, "run %s succeeded in %s\n", runID, formatDuration(took))
		printTrials(ctx, a.stdout, sess.client, out.steps)
		a.printOutputs(sess.paths(ctx), out)
		return nil
	}
	var canceled *temporal.CanceledError
	if errors.As(out.err, &canceled) {
		fmt.Fprintf(a.stderr, "porch: run %s was canceled after %s\n", runID, formatDuration(took))
		return silentExit(ExitFailure)
	}
	fmt.Fprintf(a.stderr, "porch: run %s failed after %s\n", runID, formatDuration(took))
	for _, f := range collectFailures(ctx, sess.client, sess.logs(ctx), runID, datastore, out) {
		a.printFailure(f)
	}
	return silentExit(ExitFailure)
}

// maxListedOutputs bounds the step outputs listed after a run of a
// pipeline that declares no outputs of its own: a 400-step chain would
// otherwise print 800 lines.
const maxListedOutputs = 20

// printOutputs lists the pipeline's outputs, or its steps' (at most
// maxListedOutputs) when the pipeline declares none, with their local paths.
func (a *app) printOutputs(paths pathMapper, out watchOutcome) {
	type row struct{ name, uri string }
	var rows []row
	for _, o := range out.result.Outputs {
		rows = append(rows, row{o.Name, o.URI})
	}
	if len(rows) == 0 {
		for _, s := range out.steps {
			for _, o := range s.Outputs {
				if o.Name != plan.ArtifactsOutput {
					rows = append(rows, row{s.Path + "." + o.Name, o.URI})
				}
			}
		}
	}
	if len(rows) == 0 {
		return
	}
	fmt.Fprintln(a.stdout, "outputs:")
	more := 0
	if len(rows) > maxListedOutputs {
		rows, more = rows[:maxListedOutputs], len(rows)-maxListedOutputs
	}
	for _, r := range rows {
		if local, err := paths(r.uri); err == nil && local != r.uri {
			fmt.Fprintf(a.stdout, "  %s: %s\n    %s\n", r.name, r.uri, local)
		} else {
			fmt.Fprintf(a.stdout, "  %s: %s\n", r.name, r.uri)
		}
	}
	if more > 0 {
		fmt.Fprintf(a.stdout, "  ... and %d more step outputs\n", more)
	}
}

// stepFailure is what porch tells about one failed step.
type stepFailure struct {
	path    string // "" when the run failed outside any step
	message string
	stderr  []string
	logFile string
	attempt int32 // 0 when unknown
	// tailLabel names what stderr holds: "stderr" (the default) or a
	// parallel step's "traceback".
	tailLabel string
}

func (a *app) printFailure(f stepFailure) {
	if f.path == "" {
		fmt.Fprintf(a.stderr, "porch: %s\n", f.message)
	} else {
		attempt := ""
		if f.attempt > 0 {
			attempt = fmt.Sprintf(" (attempt %d)", f.attempt)
		}
		fmt.Fprintf(a.stderr, "porch: step %q failed%s: %s\n", f.path, attempt, f.message)
	}
	if len(f.stderr) > 0 {
		label := f.tailLabel
		if label == "" {
			label = "stderr"
		}
		fmt.Fprintf(a.stderr, "  %s (last lines):\n", label)
		for _, line := range f.stderr {
			fmt.Fprintf(a.stderr, "    %s\n", line)
		}
	}
	if f.logFile != "" {
		fmt.Fprintf(a.stderr, "  log: %s\n", f.logFile)
	}
}

// collectFailures explains a failed run: its failed command steps with their
// errors, stderr tails and logs, else its failed steps, else its error.
func collectFailures(ctx context.Context, c client.Client, logs logLocator, runID, datastore string, out watchOutcome) []stepFailure {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), queryTimeout)
	defer cancel()
	var failures []stepFailure
	for _, only := range []bool{true, false} {
		for _, s := range out.steps {
			if s.Status != workflows.StatusFailed || (only && s.Type != plan.StepCommand && s.Type != plan.StepParallel) {
				continue
			}
			log := logs.find(runID, datastore, s)
			f := stepFailure{path: s.Path, message: firstLine(s.Error), logFile: log.String()}
			if s.Type == plan.StepParallel {
				f.tailLabel = "traceback"
			}
			if s.WorkflowID != "" && (s.Type == plan.StepCommand || s.Type == plan.StepParallel) {
				fillFromError(&f, c.GetWorkflow(ctx, s.WorkflowID, "").Get(ctx, nil))
			}
			if log.store != nil {
				// The failure names the log on its worker's host; the
				// datastore copy is the one every machine reads.
				f.logFile = log.String()
			}
			failures = append(failures, f)
		}
		if len(failures) > 0 {
			return failures
		}
	}
	f := stepFailure{message: deepestMessage(out.err)}
	fillFromError(&f, out.err)
	return []stepFailure{f}
}

// failureWithDetails are the error types whose details are a
// CommandFailure: a command that failed, and a parallel step whose
// mini-batches or init() failed.
var failureWithDetails = map[string]bool{
	command.CommandFailedType:          true,
	workflows.ParallelFailedType:       true,
	parallel.EntryScriptInitFailedType: true,
}

// fillFromError takes the command's failure details from err's chain.
func fillFromError(f *stepFailure, err error) {
	for e := err; e != nil; e = errors.Unwrap(e) {
		ae, ok := e.(*temporal.ApplicationError)
		if !ok || !failureWithDetails[ae.Type()] {
			continue
		}
		f.message = firstLine(ae.Message())
		var cf command.CommandFailure
		if ae.HasDetails() && ae.Details(&cf) == nil {
			f.stderr, f.attempt = cf.StderrTail, cf.Attempt
			if cf.LogFile != "" {
				f.logFile = cf.LogFile
			}
		}
		return
	}
	if f.message == "" && err != nil {
		f.message = deepestMessage(err)
	}
}

// deepestMessage is the message of the innermost error of the chain: the
// cause, without the wrappers' context.
func deepestMessage(err error) string {
	return firstLine(workflows.ErrorMessage(err))
}

// checkWorkers warns when no worker polls a task queue the plan needs: the
// run would wait for ever.
func (a *app) checkWorkers(ctx context.Context, sess *session, p *plan.Plan) {
	ctx, cancel := context.WithTimeout(ctx, queryTimeout)
	defer cancel()
	addr, connect := sess.settings.Address, sess.settings.connectFlags()
	if !hasPollers(ctx, sess.client, plan.DefaultTaskQueue, enums.TASK_QUEUE_TYPE_WORKFLOW) {
		fmt.Fprintf(a.stderr, "porch: warning: no worker runs porch workflows on %s (task queue %q): "+
			"start one with: porch worker %s\n", addr, plan.DefaultTaskQueue, connect)
	}
	for _, q := range p.TaskQueues() {
		if hasPollers(ctx, sess.client, q.Queue, enums.TASK_QUEUE_TYPE_ACTIVITY) {
			continue
		}
		fmt.Fprintf(a.stderr, "porch: warning: no worker serves %s (task queue %q): its steps wait until one does: "+
			"start one with: porch worker %s%s\n", plan.QueueOwner(q.Compute, q.Queue), q.Queue, connect,
			plan.WorkerFlags(q.Compute, q.Queue))
	}
}

// hasPollers says whether a queue has pollers; when the server cannot say,
// it assumes so rather than warn wrongly.
func hasPollers(ctx context.Context, c client.Client, tq string, kind enums.TaskQueueType) bool {
	resp, err := c.DescribeTaskQueue(ctx, tq, kind)
	if err != nil {
		return true
	}
	return len(resp.GetPollers()) > 0
}
