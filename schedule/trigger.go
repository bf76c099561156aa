package schedule

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// Trigger types and recurrence frequencies, as Azure ML spells them.
const (
	TriggerCron       = "cron"
	TriggerRecurrence = "recurrence"
)

var (
	frequencies   = []string{"minute", "hour", "day", "week", "month"}
	cronKeys      = []string{"type", "expression", "start_time", "end_time", "time_zone"}
	recurrenceKey = []string{"type", "frequency", "interval", "schedule", "start_time", "end_time", "time_zone"}
	patternKeys   = []string{"hours", "minutes", "week_days", "month_days"}
	weekDays      = []string{"sunday", "monday", "tuesday", "wednesday", "thursday", "friday", "saturday"}
)

// Trigger says when a schedule runs its job.
type Trigger struct {
	// Type is cron or recurrence.
	Type string
	// Expression is a cron trigger's five fields.
	Expression string
	cron       cronExpr
	// Frequency (minute, hour, day, week, month) and Interval are a
	// recurrence's period; Hours, Minutes, WeekDays and MonthDays its
	// schedule (pattern), when it has one.
	Frequency          string
	Interval           int
	Hours, Minutes     []int
	WeekDays           []time.Weekday
	MonthDays          []int
	hasPattern         bool
	intervalNode, node *yaml.Node
	// Start and End bound the schedule; a zero Start means the file gave
	// none: the schedule starts when it is created and runs its job at
	// once, as Azure ML does.
	Start, End time.Time
	Zone       Zone
}

// readTrigger reads the trigger: mapping.
func (r *reader) readTrigger(e entry, now time.Time) Trigger {
	var t Trigger
	if !e.present() {
		r.errorf(e.key, "trigger", "write a trigger: {type: cron, expression: \"0 * * * *\"} or {type: recurrence, frequency: day, interval: 1}",
			"the schedule has no trigger")
		return t
	}
	t.node = e.val
	all := r.mapping(e.val, "trigger", nil, true)
	if all == nil {
		return t
	}
	t.Type = strings.ToLower(r.str(all["type"], "trigger.type"))
	switch t.Type {
	case TriggerCron:
		all = r.mapping(e.val, "trigger", cronKeys, true)
	case TriggerRecurrence:
		all = r.mapping(e.val, "trigger", recurrenceKey, true)
	case "":
		r.errorf(e.val, "trigger.type", "write type: cron or type: recurrence", "the trigger has no type")
		return t
	default:
		r.errorf(all["type"].val, "trigger.type", withHint(suggestOf(t.Type, TriggerCron, TriggerRecurrence), "write cron or recurrence"),
			"%q is not a trigger type", t.Type)
		return t
	}
	t.Zone = r.zone(all["time_zone"])
	t.Start = r.when(all["start_time"], "trigger.start_time", t.Zone)
	t.End = r.when(all["end_time"], "trigger.end_time", t.Zone)
	if !t.Start.IsZero() && !t.End.IsZero() && !t.End.After(t.Start) {
		r.errorf(all["end_time"].val, "trigger.end_time", "give an end_time after start_time", "the schedule ends before it starts")
	}
	if !t.End.IsZero() && !t.End.After(now) {
		r.errorf(all["end_time"].val, "trigger.end_time", "give an end_time in the future, or none", "%s has passed: the schedule would never run",
			t.End.Format(time.RFC3339))
	}
	if t.Type == TriggerCron {
		t.Expression = r.str(all["expression"], "trigger.expression")
		if t.Expression == "" {
			r.errorf(e.val, "trigger.expression", cronHelp, "a cron trigger needs an expression")
		} else {
			t.cron, _ = r.parseCron(all["expression"].val, t.Expression)
		}
		return t
	}
	r.recurrence(all, &t, now)
	return t
}

// zone reads time_zone: UTC when absent.
func (r *reader) zone(e entry) Zone {
	name := r.str(e, "trigger.time_zone")
	if name == "" {
		return UTC
	}
	z, err := LoadZone(name)
	if err != nil {
		r.errorf(e.val, "trigger.time_zone", withHint(zoneHint(name), "write a Windows time zone name as Azure ML lists them, "+
			"such as \"Pacific Standard Time\" or \"W. Europe Standard Time\", or an IANA name such as \"America/Los_Angeles\""),
			"unknown time zone %q", name)
		return UTC
	}
	return z
}

// timeLayouts are the forms start_time and end_time take: ISO 8601 with or
// without an offset (without one, the time is in the trigger's zone).
var timeLayouts = []string{"2006-01-02T15:04:05", "2006-01-02T15:04", "2006-01-02 15:04:05", "2006-01-02 15:04", "2006-01-02"}

// when reads a start_time or end_time; zero when absent.
func (r *reader) when(e entry, field string, z Zone) time.Time {
	s := r.str(e, field)
	if s == "" {
		return time.Time{}
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05Z0700", "2006-01-02 15:04:05Z07:00"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t
		}
	}
	for _, layout := range timeLayouts {
		if t, err := time.ParseInLocation(layout, s, z.Location); err == nil {
			return t
		}
	}
	r.errorf(e.val, field, "write an ISO 8601 time such as \"2022-07-10T10:00:00\" (in time_zone) or \"2022-07-10T17:00:00Z\"",
		"%q is not a date and time", s)
	return time.Time{}
}

func suggestOf(s string, candidates ...string) string {
	return compilerSuggest(s, candidates)
}

// recurrence reads a recurrence trigger's frequency, interval and schedule.
func (r *reader) recurrence(all map[string]entry, t *Trigger, now time.Time) {
	t.Frequency = strings.ToLower(r.str(all["frequency"], "trigger.frequency"))
	switch {
	case t.Frequency == "":
		r.errorf(t.node, "trigger.frequency", "write frequency: minute, hour, day, week or month", "a recurrence trigger needs a frequency")
	case !slices.Contains(frequencies, t.Frequency):
		r.errorf(all["frequency"].val, "trigger.frequency", withHint(compilerSuggest(t.Frequency, frequencies), "write minute, hour, day, week or month"),
			"%q is not a frequency", t.Frequency)
		t.Frequency = ""
	}
	t.intervalNode = all["interval"].val
	if !all["interval"].present() {
		r.errorf(t.node, "trigger.interval", "write interval: 1 to run every "+orWord(t.Frequency, "period"), "a recurrence trigger needs an interval")
	} else if n, ok := r.integer(all["interval"], "trigger.interval", 1, 1, 1000); ok {
		t.Interval = n
	}
	p := all["schedule"]
	if p.present() {
		r.pattern(p, t)
	}
	if t.Frequency == "" || t.Interval == 0 {
		return
	}
	r.checkRecurrence(p, t, now)
}

func orWord(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// pattern reads schedule: {hours, minutes, week_days, month_days}.
func (r *reader) pattern(p entry, t *Trigger) {
	all := r.mapping(p.val, "trigger.schedule", patternKeys, true)
	if all == nil {
		return
	}
	t.hasPattern = true
	t.Hours = r.ints(all["hours"], "trigger.schedule.hours", 0, 23)
	t.Minutes = r.ints(all["minutes"], "trigger.schedule.minutes", 0, 59)
	t.MonthDays = r.ints(all["month_days"], "trigger.schedule.month_days", 1, 31)
	vals, nodes := r.scalars(all["week_days"], "trigger.schedule.week_days")
	for i, v := range vals {
		d := slices.IndexFunc(weekDays, func(w string) bool { return strings.EqualFold(w, v) })
		if d < 0 {
			r.errorf(nodes[i], "trigger.schedule.week_days", withHint(compilerSuggest(v, weekDays), "write monday, tuesday, ... sunday"),
				"%q is not a day of the week", v)
			continue
		}
		if !slices.Contains(t.WeekDays, time.Weekday(d)) {
			t.WeekDays = append(t.WeekDays, time.Weekday(d))
		}
	}
	slices.Sort(t.WeekDays)
	for _, k := range []string{"hours", "minutes"} {
		if !all[k].present() {
			r.errorf(p.val, "trigger.schedule."+k, "a schedule gives both hours and minutes, as Azure ML requires: "+
				"write hours: [9] and minutes: [0] for 09:00", "the schedule has no %s", k)
		}
	}
}

// ints reads a number or a list of numbers in [lo, hi], sorted, each once.
func (r *reader) ints(e entry, field string, lo, hi int) []int {
	vals, nodes := r.scalars(e, field)
	var out []int
	for i, v := range vals {
		if n, ok := r.number(nodes[i], v, field, lo, hi); ok && !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out
}

// checkRecurrence refuses a schedule that does not fit the frequency.
func (r *reader) checkRecurrence(p entry, t *Trigger, now time.Time) {
	switch {
	case t.hasPattern && (t.Frequency == "minute" || t.Frequency == "hour"):
		r.errorf(p.key, "trigger.schedule", "remove schedule:, or use frequency: day, week or month to run at given hours and minutes",
			"a recurrence every %s takes no schedule", plural(t.Interval, t.Frequency))
	case len(t.WeekDays) > 0 && t.Frequency == "day":
		r.errorf(p.key, "trigger.schedule.week_days", "use frequency: week to run on given days of the week", "a daily recurrence takes no week_days")
	case len(t.MonthDays) > 0 && t.Frequency != "month":
		r.errorf(p.key, "trigger.schedule.month_days", "use frequency: month to run on given days of the month",
			"a recurrence every %s takes no month_days", t.Frequency)
	case t.Frequency == "month" && 12%t.Interval != 0:
		r.errorf(t.intervalNode, "trigger.interval", "porch runs monthly recurrences every 1, 2, 3, 4, 6 or 12 months "+
			"(Temporal's calendar has no other steps across years)", "every %d months is not supported", t.Interval)
	case t.Interval > 1 && (t.Frequency == "day" || t.Frequency == "week") && observesDST(t.Zone, now):
		r.warnf(t.intervalNode, "trigger.interval", "Temporal runs it on a fixed interval of "+plural(t.Interval, t.Frequency)+
			", so its local time moves by an hour when daylight saving time starts or ends; use interval: 1, "+
			"or a cron expression, to stay on the local clock",
			"every %d %ss in %s keeps the UTC offset of its first run", t.Interval, t.Frequency, t.Zone.Name)
	}
}

// observesDST says whether a zone changes its offset within the year.
func observesDST(z Zone, now time.Time) bool {
	y := now.Year()
	_, jan := time.Date(y, 1, 1, 0, 0, 0, 0, z.Location).Zone()
	_, jul := time.Date(y, 7, 1, 0, 0, 0, 0, z.Location).Zone()
	return jan != jul
}

func plural(n int, unit string) string {
	if n == 1 {
		return unit
	}
	return fmt.Sprintf("%d %ss", n, unit)
}
