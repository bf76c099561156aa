package schedule

import (
	"fmt"
	"strings"
	"time"

	"go.temporal.io/sdk/client"
)

// Spec is the Temporal schedule spec of the trigger. created is when the
// schedule is created (or updated): a trigger without start_time counts
// from then, as Azure ML's does.
func (t Trigger) Spec(created time.Time) client.ScheduleSpec {
	spec := client.ScheduleSpec{StartAt: t.Start, EndAt: t.End, TimeZoneName: t.Zone.IANA}
	anchor := t.Start
	if anchor.IsZero() {
		anchor = created.Truncate(time.Second)
	}
	if t.Type == TriggerCron {
		spec.Calendars = t.cron.calendars(t.Describe())
		return spec
	}
	local := anchor.In(t.Zone.Location)
	hours, minutes, second := t.Hours, t.Minutes, 0
	if !t.hasPattern {
		hours, minutes, second = []int{local.Hour()}, []int{local.Minute()}, local.Second()
	}
	switch {
	case t.Frequency == "minute" || t.Frequency == "hour":
		every := time.Duration(t.Interval) * time.Minute
		if t.Frequency == "hour" {
			every = time.Duration(t.Interval) * time.Hour
		}
		spec.Intervals = []client.ScheduleIntervalSpec{{Every: every, Offset: offsetOf(anchor, every)}}
	case t.Interval == 1 || t.Frequency == "month":
		cal := client.ScheduleCalendarSpec{
			Second:     []client.ScheduleRange{{Start: second, End: second, Step: 1}},
			Minute:     valuesRanges(minutes),
			Hour:       valuesRanges(hours),
			DayOfMonth: []client.ScheduleRange{{Start: 1, End: 31, Step: 1}},
			Month:      []client.ScheduleRange{{Start: 1, End: 12, Step: 1}},
			DayOfWeek:  []client.ScheduleRange{{Start: 0, End: 6, Step: 1}},
			Comment:    t.Describe(),
		}
		t.calendarDays(&cal, local)
		spec.Calendars = []client.ScheduleCalendarSpec{cal}
	default:
		spec.Intervals = t.dayIntervals(local, hours, minutes, second)
	}
	return spec
}

// calendarDays restricts a calendar to the trigger's days: its week days
// (weekly), month days or week days (monthly), else the anchor's.
func (t Trigger) calendarDays(cal *client.ScheduleCalendarSpec, local time.Time) {
	switch t.Frequency {
	case "week":
		days := t.WeekDays
		if len(days) == 0 {
			days = []time.Weekday{local.Weekday()}
		}
		cal.DayOfWeek = weekdayRanges(days)
	case "month":
		switch {
		case len(t.MonthDays) > 0:
			cal.DayOfMonth = valuesRanges(t.MonthDays)
		case len(t.WeekDays) > 0:
			cal.DayOfWeek = weekdayRanges(t.WeekDays)
		default:
			cal.DayOfMonth = valuesRanges([]int{local.Day()})
		}
		first := (int(local.Month())-1)%t.Interval + 1
		cal.Month = []client.ScheduleRange{{Start: first, End: 12, Step: t.Interval}}
	}
}

// dayIntervals are every N days or weeks as fixed intervals, one per time
// of day (and day of the week), counted from the anchor's day.
func (t Trigger) dayIntervals(local time.Time, hours, minutes []int, second int) []client.ScheduleIntervalSpec {
	day := 24 * time.Hour
	every := time.Duration(t.Interval) * day
	days := []time.Weekday{local.Weekday()}
	if t.Frequency == "week" {
		every *= 7
		if len(t.WeekDays) > 0 {
			days = t.WeekDays
		}
	}
	var out []client.ScheduleIntervalSpec
	for _, wd := range days {
		ahead := (int(wd) - int(local.Weekday()) + 7) % 7
		for _, h := range hours {
			for _, m := range minutes {
				first := time.Date(local.Year(), local.Month(), local.Day()+ahead, h, m, second, 0, t.Zone.Location)
				out = append(out, client.ScheduleIntervalSpec{Every: every, Offset: offsetOf(first, every)})
			}
		}
	}
	return out
}

// offsetOf is t's phase in intervals of every counted from the Unix epoch,
// as Temporal counts them.
func offsetOf(t time.Time, every time.Duration) time.Duration {
	return time.Duration(t.UnixNano() % int64(every))
}

func valuesRanges(vs []int) []client.ScheduleRange {
	out := make([]client.ScheduleRange, len(vs))
	for i, v := range vs {
		out[i] = client.ScheduleRange{Start: v, End: v, Step: 1}
	}
	return out
}

func weekdayRanges(days []time.Weekday) []client.ScheduleRange {
	vs := make([]int, len(days))
	for i, d := range days {
		vs[i] = int(d)
	}
	return valuesRanges(vs)
}

// Describe says when the trigger runs, in the file's words: "cron 0 * * *
// * in Pacific Standard Time (America/Los_Angeles)", "every day at 04:00,
// 04:30 in UTC".
func (t Trigger) Describe() string {
	zone := " in " + t.Zone.String()
	if t.Type == TriggerCron {
		return "cron " + t.Expression + zone
	}
	s := "every " + plural(t.Interval, t.Frequency)
	if t.Frequency == "minute" || t.Frequency == "hour" || !t.hasPattern {
		if t.Start.IsZero() {
			return s + " from its creation"
		}
		return s + " from " + t.Start.In(t.Zone.Location).Format("2006-01-02 15:04:05") + zone
	}
	if len(t.MonthDays) > 0 {
		s += fmt.Sprintf(" on day %s", joinInts(t.MonthDays))
	}
	if len(t.WeekDays) > 0 {
		names := make([]string, len(t.WeekDays))
		for i, d := range t.WeekDays {
			names[i] = weekDays[d]
		}
		s += " on " + strings.Join(names, ", ")
	}
	var times []string
	for _, h := range t.Hours {
		for _, m := range t.Minutes {
			times = append(times, fmt.Sprintf("%02d:%02d", h, m))
		}
	}
	return s + " at " + strings.Join(times, ", ") + zone
}

func joinInts(vs []int) string {
	parts := make([]string, len(vs))
	for i, v := range vs {
		parts[i] = fmt.Sprint(v)
	}
	return strings.Join(parts, ", ")
}
