package cli

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	workflowpb "go.temporal.io/api/workflow/v1"

	"github.com/porch-pipelines/porch/compiler/plan"
	"github.com/porch-pipelines/porch/workflows"
)

// jobStreamCommand is `porch job stream RUN`, as `az ml job stream`.
func (a *app) jobStreamCommand() *cobra.Command {
	var flags serverFlags
	cmd := &cobra.Command{
		Use:   "stream RUN",
		Short: "Print a run's logs as they grow until it ends, then how it ended; exit 0 only if it succeeded (as az ml job stream)",
		Long: "Print the logs of a run's steps as they grow, until the run ends, then how it ended: its\n" +
			"outputs, or its failed steps with the last lines of their logs. The exit status is the run's:\n" +
			"0 when it succeeded, 1 otherwise. Ctrl-C stops streaming; the run goes on. A run no server\n" +
			"knows has ended: its logs and its record in the datastores are printed.",
		Args: runArgs(1, "one run id (see porch job list)"),
		RunE: func(cmd *cobra.Command, args []string) error {
			r, err := a.openRun(cmd.Context(), flags, args[0])
			if err != nil {
				return err
			}
			defer r.Close()
			if r.rec != nil {
				return a.streamRecorded(cmd.Context(), r)
			}
			return a.streamRun(cmd.Context(), r.sess, args[0], r.info)
		},
	}
	flags.register(cmd)
	return cmd
}

// streamRun follows a run's logs on its server to its end, then reports
// how it ended, as porch run does.
func (a *app) streamRun(ctx context.Context, sess *session, runID string, info *workflowpb.WorkflowExecutionInfo) error {
	fmt.Fprintf(a.stdout, "run %s on %s: %s\n", runID, sess.settings.Address, statusName(info.GetStatus()))
	if err := a.stepLogs(ctx, sess, runID, "", true); err != nil {
		if ctx.Err() != nil {
			fmt.Fprintf(a.stderr, "porch: stopped streaming; run %s goes on\n  reattach: porch job stream %s\n"+
				"  cancel:   porch job cancel %s\n", runID, runID, runID)
		}
		return err
	}
	var out watchOutcome
	out.err = sess.client.GetWorkflow(ctx, runID, "").Get(ctx, &out.result)
	out.steps, _ = newStepWatcher(sess.client).snapshot(ctx, runID)
	took := time.Since(info.GetStartTime().AsTime())
	if desc, err := sess.client.DescribeWorkflowExecution(ctx, runID, ""); err == nil {
		took = runTook(desc.GetWorkflowExecutionInfo())
	}
	return a.report(ctx, sess, runID, sess.runDatastore(ctx, runID), took, out)
}

// streamRecorded prints an ended run's logs from its datastore folder,
// then how it ended from its record.
func (a *app) streamRecorded(ctx context.Context, r *openedRun) error {
	rec := r.rec
	var stores []plan.Datastore
	if r.sess != nil {
		stores = r.sess.datastores(ctx)
	}
	home, err := resolveHome(a.getenv)
	if err != nil {
		return err
	}
	if err := a.printStoredLogs(datastoreRoots(home, stores), rec.Run, "", ""); err != nil {
		fmt.Fprintf(a.stderr, "porch: %v\n", err)
	}
	paths, logs := a.mappers(ctx, r)
	took := formatDuration(rec.Ended.Sub(rec.Started))
	switch rec.Status {
	case workflows.RecordCompleted:
		fmt.Fprintf(a.stdout, "run %s succeeded in %s\n", rec.Run, took)
		a.printOutputs(paths, watchOutcome{result: workflows.PipelineResult{Outputs: rec.Outputs}, steps: rec.steps})
		return nil
	case workflows.RecordCanceled:
		fmt.Fprintf(a.stderr, "porch: run %s was canceled after %s\n", rec.Run, took)
	default:
		fmt.Fprintf(a.stderr, "porch: run %s failed after %s\n", rec.Run, took)
		for _, f := range rec.failures(logs) {
			a.printFailure(f)
		}
	}
	return silentExit(ExitFailure)
}
