package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	commonpb "go.temporal.io/api/common/v1"
	enums "go.temporal.io/api/enums/v1"
	schedulepb "go.temporal.io/api/schedule/v1"
	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/porch-pipelines/porch/workflows"
)

// scheduleArgs checks a schedule command's one argument, the name.
func scheduleArgs(cmd *cobra.Command, args []string) error {
	if len(args) != 1 || strings.TrimSpace(args[0]) == "" {
		return usageError("%s expects one schedule name (see `porch schedule list`)", cmd.CommandPath())
	}
	return nil
}

// porchSchedule is what porch reads of a schedule's description.
type porchSchedule struct {
	name     string
	desc     *client.ScheduleDescription
	memo     scheduleMemo
	pipeline string
	queue    string
	// tags are the tags its runs carry.
	tags map[string]string
}

// describeSchedule reads a schedule porch created.
func describeSchedule(ctx context.Context, sess *session, name string) (*porchSchedule, error) {
	desc, err := sess.client.ScheduleClient().GetHandle(ctx, name).Describe(ctx)
	if err != nil {
		return nil, scheduleError(sess, name, err)
	}
	ps := &porchSchedule{name: name, desc: desc}
	act, ok := desc.Schedule.Action.(*client.ScheduleWorkflowAction)
	if !ok || fmt.Sprint(act.Workflow) != workflows.PipelineName {
		return ps, fmt.Errorf("schedule %s does not run a porch pipeline (its action starts %v)", name, actionName(desc))
	}
	ps.queue = act.TaskQueue
	dc := converter.GetDefaultDataConverter()
	if p, ok := act.Memo[memoSchedule].(*commonpb.Payload); ok {
		_ = dc.FromPayload(p, &ps.memo)
	}
	if p, ok := act.Memo[workflows.MemoTags].(*commonpb.Payload); ok {
		_ = dc.FromPayload(p, &ps.tags)
	}
	if len(act.Args) > 0 {
		var head struct {
			Name string `json:"name"`
		}
		if p, ok := act.Args[0].(*commonpb.Payload); ok && dc.FromPayload(p, &head) == nil {
			ps.pipeline = head.Name
		}
	}
	return ps, nil
}

func actionName(desc *client.ScheduleDescription) string {
	if act, ok := desc.Schedule.Action.(*client.ScheduleWorkflowAction); ok {
		return fmt.Sprintf("workflow %v", act.Workflow)
	}
	return "no workflow"
}

func (a *app) scheduleListCommand() *cobra.Command {
	var flags serverFlags
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List schedules: their trigger, state and next run",
		Args:  exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			sess, err := a.scheduleSession(ctx, flags)
			if err != nil {
				return err
			}
			defer sess.Close()
			it, err := sess.client.ScheduleClient().List(ctx, client.ScheduleListOptions{})
			if err != nil {
				return fmt.Errorf("list schedules on %s: %v", sess.settings.Address, err)
			}
			tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tSTATUS\tNEXT RUN\tPIPELINE\tTRIGGER")
			n := 0
			for it.HasNext() {
				e, err := it.Next()
				if err != nil {
					return fmt.Errorf("list schedules on %s: %v", sess.settings.Address, err)
				}
				if e.WorkflowType.Name != workflows.PipelineName {
					continue
				}
				n++
				ps, err := describeSchedule(ctx, sess, e.ID)
				if err != nil {
					// Deleted since it was listed.
					continue
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", e.ID, ps.status(), ps.nextRun(), orDefault(ps.pipeline, "-"), orDefault(ps.memo.Trigger, "-"))
			}
			if n == 0 {
				fmt.Fprintf(a.stdout, "no schedules on %s (namespace %s): create one with `porch schedule create -f FILE`\n",
					sess.settings.Address, sess.settings.Namespace)
				return nil
			}
			return tw.Flush()
		},
	}
	flags.register(cmd)
	return cmd
}

func (ps *porchSchedule) status() string {
	if ps.desc.Schedule.State.Paused {
		return "disabled"
	}
	return "enabled"
}

// nextRun is the next action time, "-" for none.
func (ps *porchSchedule) nextRun() string {
	if len(ps.desc.Info.NextActionTimes) == 0 || ps.desc.Schedule.State.Paused {
		return "-"
	}
	return ps.localTime(ps.desc.Info.NextActionTimes[0])
}

// localTime shows t in the schedule's zone.
func (ps *porchSchedule) localTime(t time.Time) string {
	if spec := ps.desc.Schedule.Spec; spec != nil && spec.TimeZoneName != "" {
		if loc, err := time.LoadLocation(spec.TimeZoneName); err == nil {
			t = t.In(loc)
		}
	}
	return t.Format("2006-01-02 15:04:05 MST")
}

func (a *app) scheduleShowCommand() *cobra.Command {
	var flags serverFlags
	cmd := &cobra.Command{
		Use:   "show NAME",
		Short: "Show a schedule: its trigger, job, policies, next runs and recent runs",
		Args:  scheduleArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			sess, err := a.scheduleSession(ctx, flags)
			if err != nil {
				return err
			}
			defer sess.Close()
			ps, err := describeSchedule(ctx, sess, args[0])
			if err != nil {
				return err
			}
			a.showSchedule(ctx, sess, ps)
			return nil
		},
	}
	flags.register(cmd)
	return cmd
}

// showSchedule prints a schedule.
func (a *app) showSchedule(ctx context.Context, sess *session, ps *porchSchedule) {
	w := a.stdout
	d := ps.desc
	fmt.Fprintf(w, "schedule %s: %s\n", ps.name, ps.status())
	if m := ps.memo; m.DisplayName != "" || m.Description != "" {
		fmt.Fprintf(w, "  %s\n", strings.Trim(m.DisplayName+": "+m.Description, ": "))
	}
	if d.Schedule.State.Note != "" {
		fmt.Fprintf(w, "note: %s\n", d.Schedule.State.Note)
	}
	fmt.Fprintf(w, "trigger: %s\n", orDefault(ps.memo.Trigger, "-"))
	if spec := d.Schedule.Spec; spec != nil {
		if !spec.StartAt.IsZero() {
			fmt.Fprintf(w, "from: %s\n", ps.localTime(spec.StartAt))
		}
		if !spec.EndAt.IsZero() {
			fmt.Fprintf(w, "until: %s\n", ps.localTime(spec.EndAt))
		}
	}
	fmt.Fprintf(w, "file: %s\n", orDefault(ps.memo.File, "-"))
	fmt.Fprintf(w, "pipeline: %s, each run named %s-<time> on task queue %s\n", orDefault(ps.pipeline, "-"), ps.name, ps.queue)
	if len(ps.tags) > 0 {
		fmt.Fprintf(w, "tags: %s\n", tagsText(ps.tags))
	}
	if pol := d.Schedule.Policy; pol != nil {
		fmt.Fprintf(w, "overlap: %s, catch-up window: %s\n", overlapName(pol.Overlap), pol.CatchupWindow)
	}
	fmt.Fprintf(w, "actions: %d taken, %d skipped for overlap, %d missed the catch-up window\n", d.Info.NumActions,
		d.Info.NumActionsSkippedOverlap, d.Info.NumActionsMissedCatchupWindow)
	if !d.Schedule.State.Paused && len(d.Info.NextActionTimes) > 0 {
		fmt.Fprintln(w, "next runs:")
		for _, t := range d.Info.NextActionTimes {
			fmt.Fprintf(w, "  %s  %s-%s\n", ps.localTime(t), ps.name, t.UTC().Format(time.RFC3339))
		}
	}
	if len(d.Info.RecentActions) > 0 {
		fmt.Fprintln(w, "recent runs:")
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		for _, r := range d.Info.RecentActions {
			id := r.StartWorkflowResult.WorkflowID
			status := "-"
			if desc, err := sess.client.DescribeWorkflowExecution(ctx, id, ""); err == nil {
				status = statusName(desc.GetWorkflowExecutionInfo().GetStatus())
			}
			fmt.Fprintf(tw, "  %s\t%s\tstarted %s\n", id, status, ps.localTime(r.ActualTime))
		}
		tw.Flush()
	}
}

// overlapName is an overlap policy as --overlap spells it.
func overlapName(p enums.ScheduleOverlapPolicy) string {
	for name, v := range overlapPolicies {
		if v == p {
			return name
		}
	}
	return "skip"
}

// schedulePauseCommand is disable (pause) or enable (unpause).
func (a *app) schedulePauseCommand(pause bool) *cobra.Command {
	var flags serverFlags
	use, short := "enable NAME", "Enable a disabled schedule: it runs again on its trigger (missed runs are not made up)"
	if pause {
		use, short = "disable NAME", "Disable a schedule: it starts no runs until enabled; running ones go on"
	}
	cmd := &cobra.Command{
		Use: use, Short: short, Args: scheduleArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			sess, err := a.scheduleSession(ctx, flags)
			if err != nil {
				return err
			}
			defer sess.Close()
			if _, err := describeSchedule(ctx, sess, args[0]); err != nil {
				return err
			}
			h := sess.client.ScheduleClient().GetHandle(ctx, args[0])
			who := submitter(a.getenv)
			if pause {
				err = h.Pause(ctx, client.SchedulePauseOptions{Note: "disabled with porch schedule disable by " + who})
			} else {
				err = h.Unpause(ctx, client.ScheduleUnpauseOptions{Note: "enabled with porch schedule enable by " + who})
			}
			if err != nil {
				return scheduleError(sess, args[0], err)
			}
			fmt.Fprintf(a.stdout, "schedule %s %sd\n", args[0], strings.Fields(use)[0])
			return nil
		},
	}
	flags.register(cmd)
	return cmd
}

func (a *app) scheduleDeleteCommand() *cobra.Command {
	var flags serverFlags
	cmd := &cobra.Command{
		Use: "delete NAME", Short: "Delete a schedule; the runs it started stay, running ones go on", Args: scheduleArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			sess, err := a.scheduleSession(ctx, flags)
			if err != nil {
				return err
			}
			defer sess.Close()
			if _, err := describeSchedule(ctx, sess, args[0]); err != nil {
				return err
			}
			if err := sess.client.ScheduleClient().GetHandle(ctx, args[0]).Delete(ctx); err != nil {
				return scheduleError(sess, args[0], err)
			}
			fmt.Fprintf(a.stdout, "schedule %s deleted\n", args[0])
			return nil
		},
	}
	flags.register(cmd)
	return cmd
}

func (a *app) scheduleTriggerCommand() *cobra.Command {
	var flags serverFlags
	var watch bool
	cmd := &cobra.Command{
		Use:   "trigger NAME",
		Short: "Run a schedule's job now, whatever its trigger says (as az ml schedule trigger)",
		Args:  scheduleArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			sess, err := a.scheduleSession(ctx, flags)
			if err != nil {
				return err
			}
			defer sess.Close()
			id, err := a.triggerSchedule(ctx, sess, args[0])
			if err != nil {
				return err
			}
			if !watch {
				fmt.Fprintf(a.stdout, "run %s started by schedule %s: watch it with `porch job show --watch %s`\n", id, args[0], id)
				return nil
			}
			desc, err := sess.client.DescribeWorkflowExecution(ctx, id, "")
			if err != nil {
				return runError(sess, id, err)
			}
			return a.watchExisting(ctx, sess, id, desc.GetWorkflowExecutionInfo())
		},
	}
	cmd.Flags().BoolVarP(&watch, "watch", "w", false, "follow the run to its end; exit non-zero if it fails")
	flags.register(cmd)
	return cmd
}

// triggerWait bounds the wait for a triggered run to start.
const triggerWait = time.Minute

// triggerSchedule starts a schedule's action now, even while another of
// its runs goes on, and returns the run's id once it has started.
func (a *app) triggerSchedule(ctx context.Context, sess *session, name string) (string, error) {
	if _, err := describeSchedule(ctx, sess, name); err != nil {
		return "", err
	}
	at := time.Now().UTC().Truncate(time.Second)
	_, err := sess.client.WorkflowService().PatchSchedule(ctx, &workflowservice.PatchScheduleRequest{
		Namespace:  sess.settings.Namespace,
		ScheduleId: name,
		Patch: &schedulepb.SchedulePatch{TriggerImmediately: &schedulepb.TriggerImmediatelyRequest{
			OverlapPolicy: enums.SCHEDULE_OVERLAP_POLICY_ALLOW_ALL, ScheduledTime: timestamppb.New(at),
		}},
		Identity: submitter(a.getenv),
	})
	if err != nil {
		return "", scheduleError(sess, name, err)
	}
	want := name + "-" + at.Format(time.RFC3339)
	deadline := time.Now().Add(triggerWait)
	for time.Now().Before(deadline) {
		if _, err := sess.client.DescribeWorkflowExecution(ctx, want, ""); err == nil {
			return want, nil
		}
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	return "", errors.New("schedule " + name + " was triggered, but its run " + want + " did not start within " + triggerWait.String() +
		": is a worker running porch workflows? see `porch schedule show " + name + "`")
}

// printRunOrigin prints what started a run and its tags: "scheduled by
// nightly (cron 0 2 * * * in UTC), due 2026-11-25T02:00:00Z".
func (a *app) printRunOrigin(info *workflowpb.WorkflowExecutionInfo) {
	sa := info.GetSearchAttributes()
	dc := converter.GetDefaultDataConverter()
	if by := keyword(sa, workflows.AttrScheduledBy); by != "" {
		line := "scheduled by " + by
		var m scheduleMemo
		if p, ok := info.GetMemo().GetFields()[memoSchedule]; ok && dc.FromPayload(p, &m) == nil && m.Trigger != "" {
			line += " (" + m.Trigger + ")"
		}
		var due time.Time
		if p, ok := sa.GetIndexedFields()[workflows.AttrScheduledStart]; ok && dc.FromPayload(p, &due) == nil {
			line += ", due " + due.UTC().Format(time.RFC3339)
		}
		fmt.Fprintln(a.stdout, line)
	}
	var tags map[string]string
	if p, ok := info.GetMemo().GetFields()[workflows.MemoTags]; ok && dc.FromPayload(p, &tags) == nil && len(tags) > 0 {
		fmt.Fprintf(a.stdout, "tags: %s\n", tagsText(tags))
	}
}
