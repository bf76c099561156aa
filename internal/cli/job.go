package cli

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/porch-pipelines/porch/workflows"
	"github.com/spf13/cobra"
	commonpb "go.temporal.io/api/common/v1"
	enums "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/converter"
)

func (a *app) jobCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "job",
		Short: "Submit, list, show, cancel runs and read their logs (as az ml job)",
	}
	cmd.AddCommand(a.jobCreateCommand(), a.jobListCommand(), a.jobShowCommand(), a.jobCancelCommand(), a.jobResumeCommand(),
		a.jobLogsCommand(), a.jobHistoryCommand(), a.jobExplainCommand(), a.jobDownloadCommand(), a.jobStreamCommand(),
		a.jobGraphCommand())
	return cmd
}

// connect opens a session with the configured server or a running porch dev.
func (a *app) connect(ctx context.Context, flags serverFlags) (*session, error) {
	s, err := a.serverSettings(flags)
	if err != nil {
		return nil, err
	}
	return a.dial(ctx, s)
}

func (a *app) jobListCommand() *cobra.Command {
	var flags serverFlags
	var limit int
	var sched string
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List runs, newest first",
		Long: "List runs, newest first: the server's, and those only their records in the datastores know\n" +
			"(embedded porch runs that have ended). With no server, the recorded runs alone.",
		Args: exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if limit < 1 {
				return usageError("--limit %d: expected a positive number", limit)
			}
			ctx := cmd.Context()
			s, err := a.serverSettings(flags)
			if errors.Is(err, errNoServer) && sched != "" {
				return fmt.Errorf("--schedule %s: %v: schedules and their runs are on the server", sched, err)
			}
			if errors.Is(err, errNoServer) {
				recs := listRecords(recordStores(ctx, s.Home, nil, nil), limit)
				if len(recs) == 0 {
					return err
				}
				return a.printRuns(mergeRuns(nil, false, recs, limit))
			}
			if err != nil {
				return err
			}
			sess, err := a.dial(ctx, s)
			if err != nil {
				return err
			}
			defer sess.Close()
			return a.listRuns(ctx, sess, limit, sched)
		},
	}
	cmd.Flags().IntVar(&limit, "limit", 20, "list at most this many runs")
	cmd.Flags().StringVar(&sched, "schedule", "", "list only the runs this schedule started")
	flags.register(cmd)
	return cmd
}

// runRow is one run as porch job list prints it.
type runRow struct {
	id, status, duration, pipeline, user string
	started                              time.Time
	// schedule is the schedule that started the run, "" for none.
	schedule string
}

// listRuns prints root runs, workflows carrying PorchRun but not
// PorchStep, with the recorded runs the server does not know; only a
// schedule's runs when sched names it.
func (a *app) listRuns(ctx context.Context, sess *session, limit int, sched string) error {
	query := fmt.Sprintf("%s IS NOT NULL AND %s IS NULL", workflows.AttrRun, workflows.AttrStep)
	if sched != "" {
		query += fmt.Sprintf(" AND %s = %q", workflows.AttrScheduledBy, sched)
	}
	resp, err := sess.client.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{
		Namespace: sess.settings.Namespace, PageSize: int32(limit), Query: query,
	})
	if err != nil {
		return fmt.Errorf("list runs on %s: %v%s", sess.settings.Address, err, searchAttributesHint(err, sess.settings))
	}
	execs := resp.GetExecutions()
	if len(execs) > limit {
		execs = execs[:limit]
	}
	var rows []runRow
	for _, e := range execs {
		rows = append(rows, runRow{id: e.GetExecution().GetWorkflowId(), status: statusName(e.GetStatus()),
			started: e.GetStartTime().AsTime(), duration: runDuration(e),
			pipeline: keyword(e.GetSearchAttributes(), workflows.AttrPipeline), user: keyword(e.GetSearchAttributes(), workflows.AttrUser),
			schedule: keyword(e.GetSearchAttributes(), workflows.AttrScheduledBy)})
	}
	var recs []*recordedRun
	if sched == "" {
		recs = listRecords(recordStores(ctx, sess.settings.Home, sess.datastores(ctx), sess), limit)
	}
	rows = mergeRuns(rows, len(execs) == limit, recs, limit)
	if len(rows) == 0 && sched != "" {
		fmt.Fprintf(a.stdout, "no runs of schedule %s on %s (namespace %s)\n", sched, sess.settings.Address, sess.settings.Namespace)
		return nil
	}
	if len(rows) == 0 {
		fmt.Fprintf(a.stdout, "no runs on %s (namespace %s)\n", sess.settings.Address, sess.settings.Namespace)
		return nil
	}
	return a.printRuns(rows)
}

// mergeRuns adds to the server's rows, newest first, the recorded runs
// it does not list, and keeps the newest limit. When the server's page
// is full, a recorded run older than its last row may be one it knows
// beyond the page: it is left out.
func mergeRuns(rows []runRow, full bool, recs []*recordedRun, limit int) []runRow {
	listed := map[string]bool{}
	oldest := time.Time{}
	for _, r := range rows {
		listed[r.id] = true
		if oldest.IsZero() || r.started.Before(oldest) {
			oldest = r.started
		}
	}
	for _, rec := range recs {
		if listed[rec.Run] || full && rec.Started.Before(oldest) {
			continue
		}
		rows = append(rows, runRow{id: rec.Run, status: rec.Status, started: rec.Started,
			duration: formatDuration(rec.Ended.Sub(rec.Started)), pipeline: rec.Pipeline, user: rec.SubmittedBy})
	}
	slices.SortStableFunc(rows, func(a, b runRow) int { return b.started.Compare(a.started) })
	if len(rows) > limit {
		rows = rows[:limit]
	}
	return rows
}

// printRuns prints the run table; with a SCHEDULE column when a schedule
// started one of the runs.
func (a *app) printRuns(rows []runRow) error {
	scheduled := slices.ContainsFunc(rows, func(r runRow) bool { return r.schedule != "" })
	tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
	head := "RUN\tSTATUS\tSTARTED\tDURATION\tPIPELINE\tUSER"
	if scheduled {
		head += "\tSCHEDULE"
	}
	fmt.Fprintln(tw, head)
	for _, r := range rows {
		user := r.user
		if user == "" {
			user = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s", r.id, r.status, r.started.Local().Format("2006-01-02 15:04:05"),
			r.duration, r.pipeline, user)
		if scheduled {
			fmt.Fprintf(tw, "\t%s", orDefault(r.schedule, "-"))
		}
		fmt.Fprintln(tw)
	}
	return tw.Flush()
}

// searchAttributesHint says how to register porch's search attributes when
// err is about them: a server other than porch's own lacks them.
func searchAttributesHint(err error, s settings) string {
	if !strings.Contains(strings.ToLower(err.Error()), "search attribute") {
		return ""
	}
	names := slices.Sorted(maps.Keys(workflows.SearchAttributes()))
	cmd := "temporal operator search-attribute create --address " + s.Address + " --namespace " + s.Namespace
	for _, n := range names {
		cmd += " --name " + n + " --type Keyword"
	}
	return ": porch's search attributes are not registered on this server; register them once with: " + cmd
}

// statusName is "running", "completed", "failed", ...
func statusName(s enums.WorkflowExecutionStatus) string {
	return strings.ToLower(strings.TrimPrefix(s.String(), "WORKFLOW_EXECUTION_STATUS_"))
}

// runDuration is how long a run took, or has been running.
func runDuration(e *workflowpb.WorkflowExecutionInfo) string {
	start := e.GetStartTime().AsTime()
	end := time.Now()
	if e.GetCloseTime() != nil && e.GetStatus() != enums.WORKFLOW_EXECUTION_STATUS_RUNNING {
		end = e.GetCloseTime().AsTime()
	}
	return formatDuration(end.Sub(start))
}

// keyword decodes a keyword search attribute, "" when absent.
func keyword(sa *commonpb.SearchAttributes, name string) string {
	p, ok := sa.GetIndexedFields()[name]
	if !ok {
		return ""
	}
	var s string
	if converter.GetDefaultDataConverter().FromPayload(p, &s) != nil {
		return ""
	}
	return s
}

func (a *app) jobCancelCommand() *cobra.Command {
	var flags serverFlags
	cmd := &cobra.Command{
		Use:   "cancel RUN",
		Short: "Cancel a run: its running steps are stopped, the others never start",
		Args:  runArgs(1, "one run id (see porch job list)"),
		RunE: func(cmd *cobra.Command, args []string) error {
			sess, err := a.connect(cmd.Context(), flags)
			if err != nil {
				return err
			}
			defer sess.Close()
			desc, err := sess.client.DescribeWorkflowExecution(cmd.Context(), args[0], "")
			if err != nil {
				return runError(sess, args[0], err)
			}
			if st := desc.GetWorkflowExecutionInfo().GetStatus(); st != enums.WORKFLOW_EXECUTION_STATUS_RUNNING {
				return fmt.Errorf("run %s has already ended (%s): there is nothing to cancel", args[0], statusName(st))
			}
			if err := sess.client.CancelWorkflow(cmd.Context(), args[0], ""); err != nil {
				return runError(sess, args[0], err)
			}
			fmt.Fprintf(a.stdout, "cancel requested for run %s: watch it stop with `porch job show --watch %s`\n",
				args[0], args[0])
			return nil
		},
	}
	flags.register(cmd)
	return cmd
}

func (a *app) jobResumeCommand() *cobra.Command {
	var flags serverFlags
	var detach bool
	cmd := &cobra.Command{
		Use:   "resume RUN",
		Short: "Run a failed or canceled run again: only what did not succeed runs",
		Long: "Start a failed or canceled run again under the same id, with the same plan and inputs.\n" +
			"Command and parallel steps that succeeded are reused as they are; a parallel step runs\n" +
			"only the mini-batches that did not succeed.",
		Args: runArgs(1, "one run id (see porch job list)"),
		RunE: func(cmd *cobra.Command, args []string) error {
			sess, err := a.connect(cmd.Context(), flags)
			if err != nil {
				return err
			}
			defer sess.Close()
			run, reused, err := workflows.Resume(cmd.Context(), sess.client, args[0])
			if errors.Is(err, workflows.ErrRunning) {
				return fmt.Errorf("run %s is still running: wait for it to end, or cancel it with `porch job cancel %s`", args[0], args[0])
			}
			if err != nil {
				return runError(sess, args[0], err)
			}
			what := "no step succeeded before: every step runs"
			if len(reused) > 0 {
				what = fmt.Sprintf("reusing %d steps that succeeded: %s", len(reused), strings.Join(reused, ", "))
			}
			fmt.Fprintf(a.stdout, "run %s resumed; %s\n", args[0], what)
			if detach {
				fmt.Fprintf(a.stdout, "watch it with `porch job show --watch %s`\n", args[0])
				return nil
			}
			desc, err := sess.client.DescribeWorkflowExecution(cmd.Context(), args[0], run.GetRunID())
			if err != nil {
				return runError(sess, args[0], err)
			}
			return a.watchExisting(cmd.Context(), sess, args[0], desc.GetWorkflowExecutionInfo())
		},
	}
	cmd.Flags().BoolVarP(&detach, "detach", "d", false, "return once the run is resumed, without watching it")
	flags.register(cmd)
	return cmd
}

// runError explains an error about a run, saying what to do when the run
// does not exist.
func runError(sess *session, runID string, err error) error {
	var nf *serviceerror.NotFound
	if errors.As(err, &nf) {
		return fmt.Errorf("no run %q on %s (namespace %s): list runs with `porch job list`", runID,
			sess.settings.Address, sess.settings.Namespace)
	}
	return fmt.Errorf("run %s: %v", runID, err)
}
