package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	enums "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/porch-pipelines/porch/schedule"
)

func (a *app) scheduleCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "schedule",
		Short: "Run pipeline jobs on a timetable: Azure ML schedule YAML as Temporal Schedules (as az ml schedule)",
	}
	cmd.AddCommand(a.scheduleCreateCommand(false), a.scheduleCreateCommand(true), a.scheduleListCommand(),
		a.scheduleShowCommand(), a.schedulePauseCommand(true), a.schedulePauseCommand(false),
		a.scheduleTriggerCommand(), a.scheduleDeleteCommand())
	return cmd
}

// scheduleFlags are the flags of schedule create and update.
type scheduleFlags struct {
	server  serverFlags
	file    string
	set     []string
	overlap string
	catchup time.Duration
}

// overlapPolicies are --overlap's values: what a schedule does when a run
// is due while the last one still runs.
var overlapPolicies = map[string]enums.ScheduleOverlapPolicy{
	"skip":            enums.SCHEDULE_OVERLAP_POLICY_SKIP,
	"buffer_one":      enums.SCHEDULE_OVERLAP_POLICY_BUFFER_ONE,
	"buffer_all":      enums.SCHEDULE_OVERLAP_POLICY_BUFFER_ALL,
	"cancel_other":    enums.SCHEDULE_OVERLAP_POLICY_CANCEL_OTHER,
	"terminate_other": enums.SCHEDULE_OVERLAP_POLICY_TERMINATE_OTHER,
	"allow_all":       enums.SCHEDULE_OVERLAP_POLICY_ALLOW_ALL,
}

const overlapUsage = "when a run is due while the last still runs: skip (the default), buffer_one, buffer_all, " +
	"cancel_other, terminate_other or allow_all"

func (a *app) scheduleCreateCommand(update bool) *cobra.Command {
	var f scheduleFlags
	use, short := "create -f FILE", "Create a schedule from an Azure ML schedule YAML file (as az ml schedule create)"
	if update {
		use, short = "update -f FILE", "Replace a schedule's trigger and job with what its file says now (its job compiled again)"
	}
	cmd := &cobra.Command{
		Use:   use,
		Short: short,
		Long: short + ".\n\nThe job is compiled, and its code snapshotted, now: every run the schedule starts is the same job,\n" +
			"as in Azure ML. Schedules live on a server that outlives porch: the configured one, else the running\n" +
			"`porch dev` of this porch home.",
		Args: exactArgs(0, "no arguments: name the schedule file with -f"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if f.file == "" {
				return usageError("%s needs the schedule file: %s", cmd.CommandPath(), "porch schedule "+use)
			}
			if _, ok := overlapPolicies[f.overlap]; !ok && f.overlap != "" {
				return usageError("--overlap %q: expected one of skip, buffer_one, buffer_all, cancel_other, terminate_other, allow_all", f.overlap)
			}
			if f.catchup < 0 {
				return usageError("--catchup-window %s: expected a positive duration such as 1h", f.catchup)
			}
			return a.putSchedule(cmd.Context(), f, update)
		},
	}
	cmd.Flags().StringVarP(&f.file, "file", "f", "", "the schedule YAML file")
	cmd.Flags().StringArrayVar(&f.set, "set", nil, "override what the file says (repeatable): trigger.time_zone=..., "+
		"trigger.expression=..., create_job.inputs.NAME=VALUE, ...")
	cmd.Flags().StringVar(&f.overlap, "overlap", "", overlapUsage)
	cmd.Flags().DurationVar(&f.catchup, "catchup-window", 0, "after the server was down, start runs missed at most this long ago "+
		"(one, with --overlap skip); default: Temporal's, one year")
	f.server.register(cmd)
	return cmd
}

// scheduleSession connects to the server schedules live on: one that
// outlives porch.
func (a *app) scheduleSession(ctx context.Context, flags serverFlags) (*session, error) {
	s, err := a.serverSettings(flags)
	if errors.Is(err, errNoServer) {
		return nil, fmt.Errorf("schedules live on a server that outlives porch, and none is configured and no `porch dev` is "+
			"running: start one with `porch dev`, or give a server's address with --address or %s", envAddress)
	}
	if err != nil {
		return nil, err
	}
	return a.dial(ctx, s)
}

// putSchedule creates or updates the schedule a file describes.
func (a *app) putSchedule(ctx context.Context, f scheduleFlags, update bool) error {
	set, err := parseScheduleSet(f.set)
	if err != nil {
		return err
	}
	data, err := a.readSource(ctx, f.file)
	if err != nil {
		return err
	}
	now := time.Now()
	s, diags := schedule.Parse(f.file, data, schedule.Options{Set: set, Now: now})
	if len(diags) > 0 {
		diags.Format(a.stderr)
	}
	if s == nil {
		return silentExit(ExitFailure)
	}
	p, err := a.compileAt(ctx, s.Job.File, s.Job.Set, f.server, true, s.Job.At)
	if err != nil {
		return err
	}
	source, err := a.readSource(ctx, s.Job.File)
	if err != nil {
		return err
	}
	sess, err := a.scheduleSession(ctx, f.server)
	if err != nil {
		return err
	}
	defer sess.Close()
	a.checkWorkers(ctx, sess, p)
	if err := a.prepareStart(ctx, sess, p); err != nil {
		return err
	}
	sc := newScheduled(s, p, source, now)
	// The schedule's runs read the plan stored now, whatever the files
	// become.
	if err := sc.storePlan(ctx, sess); err != nil {
		return err
	}
	if update {
		err = a.updateSchedule(ctx, sess, sc, f)
	} else {
		err = a.createSchedule(ctx, sess, sc, f)
	}
	if err != nil {
		return err
	}
	a.printPut(sess, sc, update)
	return nil
}

// parseScheduleSet parses --set KEY=VALUE flags of a schedule.
func parseScheduleSet(flags []string) (map[string]string, error) {
	set := map[string]string{}
	for _, f := range flags {
		key, value, ok := strings.Cut(f, "=")
		if key = strings.TrimSpace(key); !ok || key == "" {
			return nil, usageError("--set %q: expected KEY=VALUE, KEY a path in the schedule such as trigger.time_zone", f)
		}
		set[key] = value
	}
	return set, nil
}

func (a *app) createSchedule(ctx context.Context, sess *session, sc *scheduled, f scheduleFlags) error {
	opts := client.ScheduleOptions{
		ID:            sc.s.Name,
		Spec:          sc.spec,
		Action:        sc.action(nil),
		Overlap:       overlapPolicies[orDefault(f.overlap, "skip")],
		CatchupWindow: f.catchup,
		Note:          sc.note(),
		// As in Azure ML, a schedule without start_time runs its job at
		// once, then on its trigger.
		TriggerImmediately: sc.s.Trigger.Start.IsZero(),
	}
	h, err := sess.client.ScheduleClient().Create(ctx, opts)
	if errors.Is(err, temporal.ErrScheduleAlreadyRunning) {
		return fmt.Errorf("schedule %q already exists on %s: change it with `porch schedule update -f %s`, or delete it first",
			sc.s.Name, sess.settings.Address, sc.s.File)
	}
	if err != nil {
		return fmt.Errorf("create schedule %s on %s: %v%s", sc.s.Name, sess.settings.Address, err, searchAttributesHint(err, sess.settings))
	}
	return sc.labelNextRuns(ctx, h)
}

func (a *app) updateSchedule(ctx context.Context, sess *session, sc *scheduled, f scheduleFlags) error {
	h := sess.client.ScheduleClient().GetHandle(ctx, sc.s.Name)
	err := h.Update(ctx, client.ScheduleUpdateOptions{DoUpdate: func(in client.ScheduleUpdateInput) (*client.ScheduleUpdate, error) {
		s := in.Description.Schedule
		s.Spec = &sc.spec
		s.Action = sc.action(nil)
		if f.overlap != "" {
			s.Policy.Overlap = overlapPolicies[f.overlap]
		}
		if f.catchup > 0 {
			s.Policy.CatchupWindow = f.catchup
		}
		if !s.State.Paused {
			s.State.Note = sc.note()
		}
		return &client.ScheduleUpdate{Schedule: &s}, nil
	}})
	if err != nil {
		return scheduleError(sess, sc.s.Name, err)
	}
	return sc.labelNextRuns(ctx, h)
}

// scheduleError explains an error about a schedule, saying what to do
// when it does not exist.
func scheduleError(sess *session, name string, err error) error {
	var nf *serviceerror.NotFound
	if errors.As(err, &nf) {
		return fmt.Errorf("no schedule %q on %s (namespace %s): list schedules with `porch schedule list`, "+
			"create one with `porch schedule create -f FILE`", name, sess.settings.Address, sess.settings.Namespace)
	}
	return fmt.Errorf("schedule %s: %v", name, err)
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// printPut says what was created or updated, and when it runs next.
func (a *app) printPut(sess *session, sc *scheduled, update bool) {
	verb := "created"
	if update {
		verb = "updated"
	}
	fmt.Fprintf(a.stdout, "schedule %s %s on %s: %s\n", sc.s.Name, verb, sess.settings.Address, sc.s.Trigger.Describe())
	fmt.Fprintf(a.stdout, "  job: %s (pipeline %s, %d steps), each run named %s-<time>\n", relPath(sc.s.Job.File), sc.p.Name,
		countSteps(sc.p.Pipeline), sc.s.Name)
	if len(sc.next) > 0 {
		fmt.Fprintf(a.stdout, "  next runs: %s\n", joinTimes(sc.next, sc.s.Trigger.Zone, 3))
	}
	if sc.s.Trigger.Start.IsZero() && !update {
		fmt.Fprintf(a.stdout, "  first run: now (the trigger has no start_time, as in Azure ML)\n")
	}
	fmt.Fprintf(a.stdout, "  show it with `porch schedule show %s`, list its runs with `porch job list --schedule %s`\n", sc.s.Name, sc.s.Name)
}

// joinTimes lists up to n times in the schedule's zone.
func joinTimes(ts []time.Time, z schedule.Zone, n int) string {
	var parts []string
	for i, t := range ts {
		if i == n {
			parts = append(parts, "...")
			break
		}
		parts = append(parts, t.In(z.Location).Format("2006-01-02 15:04 MST"))
	}
	return strings.Join(parts, ", ")
}
