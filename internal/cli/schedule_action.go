package cli

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"go.temporal.io/sdk/client"

	"github.com/porch-pipelines/porch/compiler/plan"
	"github.com/porch-pipelines/porch/schedule"
	"github.com/porch-pipelines/porch/workflows"
)

// memoSchedule is the memo key of the schedule that started a run: a
// scheduleMemo.
const memoSchedule = "schedule"

// scheduleMemo is what a schedule's runs carry of it in their memo.
type scheduleMemo struct {
	Name        string `json:"name"`
	File        string `json:"file"`
	Trigger     string `json:"trigger"`
	DisplayName string `json:"display_name,omitempty"`
	Description string `json:"description,omitempty"`
}

// Bounds of a schedule's labels, as porch's other labels.
const (
	maxScheduleSummary = 100
	maxScheduleDetails = 16 << 10
)

// scheduled is a schedule file made ready for Temporal: its job compiled
// (code snapshotted), its spec, and when it runs next once created.
type scheduled struct {
	s      *schedule.Schedule
	p      *plan.Plan
	source []byte
	spec   client.ScheduleSpec
	next   []time.Time
	// at is when it was read: the next runs are as of then.
	at time.Time
}

// newScheduled prepares a schedule's plan as Azure ML does a scheduled
// job's: its experiment is the schedule's name unless the job names one,
// and its runs carry the schedule's tags, the job's overriding them.
func newScheduled(s *schedule.Schedule, p *plan.Plan, source []byte, now time.Time) *scheduled {
	if p.ExperimentName == "" {
		p.ExperimentName = s.Name
	}
	if len(s.Tags) > 0 {
		tags := maps.Clone(s.Tags)
		maps.Copy(tags, p.Tags)
		p.Tags = tags
	}
	return &scheduled{s: s, p: p, source: source, spec: s.Trigger.Spec(now), at: now}
}

// storePlan stores the plan the schedule's action names on the server.
func (sc *scheduled) storePlan(ctx context.Context, sess *session) error {
	holder := workflows.PlanHolder{Schedule: sc.s.Name}
	if err := workflows.NewStartRequest(sc.p, "", sc.source).StorePlan(ctx, sess.client, holder); err != nil {
		return fmt.Errorf("schedule %s: %w", sc.s.Name, err)
	}
	return nil
}

// action starts porch's Pipeline workflow with the options and input porch
// run starts a run with (workflows.NewStartRequest), without a run id:
// Temporal names each run <schedule>-<time>, and the run takes that name.
func (sc *scheduled) action(next []time.Time) *client.ScheduleWorkflowAction {
	r := workflows.NewStartRequest(sc.p, "", sc.source)
	r.Options.Memo[memoSchedule] = scheduleMemo{Name: sc.s.Name, File: absPath(sc.s.File), Trigger: sc.s.Trigger.Describe(),
		DisplayName: sc.s.DisplayName, Description: sc.s.Description}
	return &client.ScheduleWorkflowAction{
		ID:                       sc.s.Name,
		Workflow:                 workflows.PipelineName,
		Args:                     []any{r.Input},
		TaskQueue:                r.Options.TaskQueue,
		WorkflowExecutionTimeout: r.Options.WorkflowExecutionTimeout,
		WorkflowRunTimeout:       r.Options.WorkflowRunTimeout,
		WorkflowTaskTimeout:      r.Options.WorkflowTaskTimeout,
		RetryPolicy:              r.Options.RetryPolicy,
		Memo:                     r.Options.Memo,
		TypedSearchAttributes:    r.Options.TypedSearchAttributes,
		Priority:                 r.Options.Priority,
		StaticSummary:            sc.summary(),
		StaticDetails:            sc.details(next),
	}
}

// summary labels the schedule's action, and so each of its runs:
// "pipeline train: 3 steps · schedule nightly".
func (sc *scheduled) summary() string {
	return cutText(workflows.RunSummary(sc.p)+" · schedule "+sc.s.Name, maxScheduleSummary)
}

// note is the schedule's note, which the Temporal UI's schedule page and
// temporal schedule describe show: the pipeline and the trigger.
func (sc *scheduled) note() string {
	return fmt.Sprintf("porch: pipeline %s (%s, %d steps), %s", sc.p.Name, relPath(sc.s.Job.File), countSteps(sc.p.Pipeline),
		sc.s.Trigger.Describe())
}

// details are the action's markdown details: the schedule, its trigger,
// its next runs as of when it was created or updated, then the run's.
func (sc *scheduled) details(next []time.Time) string {
	var b strings.Builder
	fmt.Fprintf(&b, "**porch schedule** `%s`", sc.s.Name)
	if sc.s.DisplayName != "" {
		fmt.Fprintf(&b, " (%s)", sc.s.DisplayName)
	}
	if sc.s.Description != "" {
		fmt.Fprintf(&b, ": %s", sc.s.Description)
	}
	fmt.Fprintf(&b, "\n\nRuns `%s` (pipeline `%s`, %d steps) %s", sc.s.Job.File, sc.p.Name, countSteps(sc.p.Pipeline), sc.s.Trigger.Describe())
	t := sc.s.Trigger
	if !t.Start.IsZero() {
		fmt.Fprintf(&b, ", from %s", t.Start.In(t.Zone.Location).Format("2006-01-02 15:04:05 MST"))
	}
	if !t.End.IsZero() {
		fmt.Fprintf(&b, ", until %s", t.End.In(t.Zone.Location).Format("2006-01-02 15:04:05 MST"))
	}
	fmt.Fprintf(&b, ". Each run is named `%s-<time>` (the time it was due, in UTC); `${{name}}` and "+
		"`${{creation_context.trigger_time}}` in its inputs are filled as it starts.\n", sc.s.Name)
	if len(sc.p.Tags) > 0 {
		fmt.Fprintf(&b, "\nTags: `%s`\n", tagsText(sc.p.Tags))
	}
	if len(next) > 0 {
		fmt.Fprintf(&b, "\n**Next runs** (as of %s): %s\n", sc.at.In(t.Zone.Location).Format("2006-01-02 15:04 MST"),
			joinTimes(next, t.Zone, len(next)))
	}
	b.WriteString("\n---\n\n")
	b.WriteString(workflows.RunDetails(sc.p, sc.s.Name+"-<time>"))
	return cutText(b.String(), maxScheduleDetails)
}

// labelNextRuns reads when the schedule runs next and writes it into the
// action's details.
func (sc *scheduled) labelNextRuns(ctx context.Context, h client.ScheduleHandle) error {
	desc, err := h.Describe(ctx)
	if err != nil {
		return fmt.Errorf("read schedule %s back: %v", sc.s.Name, err)
	}
	sc.next = desc.Info.NextActionTimes
	if len(sc.next) == 0 {
		return nil
	}
	return h.Update(ctx, client.ScheduleUpdateOptions{DoUpdate: func(in client.ScheduleUpdateInput) (*client.ScheduleUpdate, error) {
		s := in.Description.Schedule
		s.Action = sc.action(sc.next)
		return &client.ScheduleUpdate{Schedule: &s}, nil
	}})
}

// tagsText is "k=v, k2=v2", sorted by key.
func tagsText(tags map[string]string) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(tags)) {
		parts = append(parts, k+"="+tags[k])
	}
	return strings.Join(parts, ", ")
}

// cutText bounds s to n bytes, on a rune boundary, marking the cut.
func cutText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	s = s[:n-len("…")]
	for !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return s + "…"
}
