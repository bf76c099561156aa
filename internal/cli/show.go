package cli

import (
	"context"
	"fmt"
	"io"
	"regexp"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/porch-pipelines/porch/workflows"
	"github.com/spf13/cobra"
	enums "go.temporal.io/api/enums/v1"
	workflowpb "go.temporal.io/api/workflow/v1"
)

func (a *app) jobShowCommand() *cobra.Command {
	var flags serverFlags
	var watch bool
	cmd := &cobra.Command{
		Use:   "show RUN",
		Short: "Show a run's steps; with --watch, follow it to the end",
		Long: "Show a run's steps, their statuses, durations and errors, why steps ran rather than reuse\n" +
			"an earlier run's outputs, and the run's outputs or failures. A run no server knows (an embedded\n" +
			"porch run's, once it has ended) is shown from the record it left in its datastore folder.",
		Args: runArgs(1, "one run id (see porch job list)"),
		RunE: func(cmd *cobra.Command, args []string) error {
			r, err := a.openRun(cmd.Context(), flags, args[0])
			if err != nil {
				return err
			}
			defer r.Close()
			if r.rec != nil {
				// A recorded run has ended: there is nothing to follow.
				paths, logs := a.mappers(cmd.Context(), r)
				a.showRecorded(r.rec, paths, logs)
				if watch && r.rec.Status != workflows.RecordCompleted {
					return silentExit(ExitFailure)
				}
				return nil
			}
			if watch {
				return a.watchExisting(cmd.Context(), r.sess, args[0], r.info)
			}
			return a.showRun(cmd.Context(), r.sess, args[0], r.info)
		},
	}
	cmd.Flags().BoolVarP(&watch, "watch", "w", false, "follow the run's progress until it ends; exit non-zero if it fails")
	flags.register(cmd)
	return cmd
}

// watchExisting follows a submitted run like porch run does.
func (a *app) watchExisting(ctx context.Context, sess *session, runID string, info *workflowpb.WorkflowExecutionInfo) error {
	fmt.Fprintf(a.stdout, "run %s on %s: %s\n", runID, sess.settings.Address, statusName(info.GetStatus()))
	run := sess.client.GetWorkflow(ctx, runID, "")
	out := a.watch(ctx, sess, run, newProgress(a.stdout, a.terminal))
	if out.interrupted {
		fmt.Fprintf(a.stderr, "porch: stopped watching; run %s goes on\n  reattach: porch job show --watch %s\n"+
			"  cancel:   porch job cancel %s\n", runID, runID, runID)
		return silentExit(ExitInterrupted)
	}
	took := time.Since(info.GetStartTime().AsTime())
	if desc, err := sess.client.DescribeWorkflowExecution(ctx, runID, ""); err == nil {
		took = runTook(desc.GetWorkflowExecutionInfo())
	}
	return a.report(ctx, sess, runID, sess.runDatastore(ctx, runID), took, out)
}

// runTook is a closed run's duration, or how long it has been running.
func runTook(info *workflowpb.WorkflowExecutionInfo) time.Duration {
	end := time.Now()
	if info.GetStatus() != enums.WORKFLOW_EXECUTION_STATUS_RUNNING && info.GetCloseTime() != nil {
		end = info.GetCloseTime().AsTime()
	}
	return end.Sub(info.GetStartTime().AsTime())
}

// showRun prints a run's state once: its steps, and its outputs or failures.
func (a *app) showRun(ctx context.Context, sess *session, runID string, info *workflowpb.WorkflowExecutionInfo) error {
	fmt.Fprintf(a.stdout, "run %s: %s (started %s, %s %s)\n", runID, statusName(info.GetStatus()),
		info.GetStartTime().AsTime().Local().Format("2006-01-02 15:04:05"), tookWord(info), formatDuration(runTook(info)))
	if user := keyword(info.GetSearchAttributes(), workflows.AttrUser); user != "" {
		fmt.Fprintf(a.stdout, "submitted by %s\n", user)
	}
	a.printRunOrigin(info)
	w := newStepWatcher(sess.client)
	w.workers = newWorkerCheck(sess.client, sess.settings.connectFlags(), 0)
	steps, err := w.snapshot(ctx, runID)
	if err != nil {
		return fmt.Errorf("read the steps of run %s: %v: porch reads them from a worker running porch workflows "+
			"(start one with: porch worker %s)", runID, err, sess.settings.connectFlags())
	}
	steps = endedWithRun(steps, info)
	writeStepTable(a, steps)
	writeWhyStepsRan(a.stdout, runID, steps)
	printUsage(ctx, a.stdout, sess.client, steps)
	printTrials(ctx, a.stdout, sess.client, steps)
	out := watchOutcome{steps: steps}
	switch info.GetStatus() {
	case enums.WORKFLOW_EXECUTION_STATUS_COMPLETED:
		if sess.client.GetWorkflow(ctx, runID, "").Get(ctx, &out.result) == nil {
			a.printOutputs(sess.paths(ctx), out)
		}
	case enums.WORKFLOW_EXECUTION_STATUS_RUNNING:
	default:
		out.err = sess.client.GetWorkflow(ctx, runID, "").Get(ctx, nil)
		for _, f := range collectFailures(ctx, sess.client, sess.logs(ctx), runID, sess.runDatastore(ctx, runID), out) {
			a.printFailure(f)
		}
	}
	return nil
}

// endedWithRun marks the steps a closed run left running or waiting as
// ended with it, when it closed: a run terminated (or timed out) from
// Temporal answers its steps query as it was at that moment, with steps
// still running, whose durations would go on counting and whose progress
// would still count running work.
func endedWithRun(steps []workflows.StepState, info *workflowpb.WorkflowExecutionInfo) []workflows.StepState {
	status := info.GetStatus()
	switch status {
	case enums.WORKFLOW_EXECUTION_STATUS_RUNNING, enums.WORKFLOW_EXECUTION_STATUS_COMPLETED,
		enums.WORKFLOW_EXECUTION_STATUS_FAILED, enums.WORKFLOW_EXECUTION_STATUS_CONTINUED_AS_NEW:
		return steps
	}
	var closed time.Time
	if info.GetCloseTime() != nil {
		closed = info.GetCloseTime().AsTime()
	}
	for i, s := range steps {
		if finished(s.Status) {
			continue
		}
		steps[i].Status = workflows.StatusCanceled
		steps[i].Error = "the run was " + statusName(status)
		if s.Ended.IsZero() && !s.Started.IsZero() && !closed.IsZero() {
			steps[i].Ended = closed
		}
		steps[i].Detail = strings.Trim(runningWork.ReplaceAllString(s.Detail, ""), ",; ")
	}
	return steps
}

// runningWork is the part of a step's progress that counts work running
// ("8 running" in "312/400 mini-batches, 2 failed, 8 running").
var runningWork = regexp.MustCompile(`(^|[,;] *)\d+ running\b`)

func tookWord(info *workflowpb.WorkflowExecutionInfo) string {
	if info.GetStatus() == enums.WORKFLOW_EXECUTION_STATUS_RUNNING {
		return "running for"
	}
	return "took"
}

// writeStepTable prints one row per step.
func writeStepTable(a *app, steps []workflows.StepState) {
	tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "STEP\tSTATUS\tDURATION\tATTEMPT\tPROGRESS\tERROR")
	now := time.Now()
	for _, s := range steps {
		d := "-"
		if took, ok := stepDuration(now, s); ok {
			d = formatDuration(took)
		}
		attempt := "-"
		if s.Attempt > 0 {
			attempt = fmt.Sprint(s.Attempt)
		}
		detail := s.Detail
		if detail == "" {
			detail = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", s.Path, s.Status, d, attempt, detail, truncate(firstLine(s.Error), 60))
	}
	tw.Flush()
}

// writeWhyStepsRan prints, below the steps, why each step that could have
// been reused ran.
func writeWhyStepsRan(w io.Writer, runID string, steps []workflows.StepState) {
	first := true
	for _, s := range steps {
		if s.Reuse == nil || s.Reuse.Reason == "" || s.Status == workflows.StatusReused {
			continue
		}
		if first {
			fmt.Fprintf(w, "why steps ran rather than reuse an earlier run's outputs (porch job explain %s STEP says more):\n", runID)
			first = false
		}
		fmt.Fprintf(w, "  %s: %s\n", s.Path, s.Reuse.Reason)
	}
}
