package schedule

import (
	"fmt"
	"strconv"
	"strings"

	"go.temporal.io/sdk/client"
	"go.yaml.in/yaml/v3"

	"github.com/porch-pipelines/porch/compiler"
)

// cronField is one of a cron expression's five fields.
type cronField struct {
	name   string
	lo, hi int
	// names are the words the field takes for its values, from lo.
	names []string
	// any says whether "?" stands for "*", as in Azure's and Quartz's
	// day fields.
	any bool
}

var cronFields = [5]cronField{
	{name: "minute", lo: 0, hi: 59},
	{name: "hour", lo: 0, hi: 23},
	{name: "day of month", lo: 1, hi: 31, any: true},
	{name: "month", lo: 1, hi: 12, names: []string{"jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"}},
	// 7 is Sunday too, as in Vixie cron.
	{name: "day of week", lo: 0, hi: 7, names: []string{"sun", "mon", "tue", "wed", "thu", "fri", "sat"}, any: true},
}

// cronExpr is a parsed five-field cron expression.
type cronExpr struct {
	fields [5][]client.ScheduleRange
	// star says whether a field starts with * or ?: Vixie cron runs on
	// the days either day field names when neither does.
	star [5]bool
}

const cronHelp = "write five fields, MINUTES HOURS DAYS MONTHS DAYS-OF-WEEK, each *, a value, a range a-b, a step */n or a-b/n, " +
	"or a list of those separated by commas, as \"0 * * * *\" (hourly) or \"30 9 * * MON-FRI\""

// parseCron parses expr, the value of node n, reporting each problem at
// the field it is in.
func (r *reader) parseCron(n *yaml.Node, expr string) (cronExpr, bool) {
	var c cronExpr
	if strings.HasPrefix(strings.TrimSpace(expr), "@") {
		r.errorf(n, "trigger.expression", cronHelp+"; or write type: recurrence for @daily-style shorthands",
			"%q is not a five-field cron expression", expr)
		return c, false
	}
	words, offsets := splitFields(expr)
	if len(words) != 5 {
		r.errorf(n, "trigger.expression", cronHelp, "a cron expression has 5 fields, %q has %d", expr, len(words))
		return c, false
	}
	ok := true
	for i, w := range words {
		ranges, err := cronFields[i].parse(w)
		if err != nil {
			r.report(compiler.Error, r.valuePos(n, offsets[i]+err.offset), "trigger.expression", cronHelp,
				"%s field %q: %s", cronFields[i].name, w, err.msg)
			ok = false
			continue
		}
		c.fields[i] = ranges
		c.star[i] = strings.HasPrefix(w, "*") || strings.HasPrefix(w, "?")
	}
	return c, ok
}

// splitFields splits on spaces and tabs, keeping each word's offset.
func splitFields(s string) ([]string, []int) {
	var words []string
	var offsets []int
	start := -1
	for i := 0; i <= len(s); i++ {
		if i == len(s) || s[i] == ' ' || s[i] == '\t' {
			if start >= 0 {
				words, offsets = append(words, s[start:i]), append(offsets, start)
				start = -1
			}
			continue
		}
		if start < 0 {
			start = i
		}
	}
	return words, offsets
}

// fieldError is a problem at offset within a field.
type fieldError struct {
	offset int
	msg    string
}

// parse parses a field: a comma-separated list of items.
func (f cronField) parse(w string) ([]client.ScheduleRange, *fieldError) {
	var out []client.ScheduleRange
	off := 0
	for _, item := range strings.Split(w, ",") {
		ranges, err := f.item(item)
		if err != nil {
			err.offset += off
			return nil, err
		}
		out = append(out, ranges...)
		off += len(item) + 1
	}
	return out, nil
}

// item parses *, ?, a, a-b, */n, a/n and a-b/n.
func (f cronField) item(item string) ([]client.ScheduleRange, *fieldError) {
	if item == "" {
		return nil, &fieldError{0, "an empty item: write a value between the commas"}
	}
	span, stepText, hasStep := strings.Cut(item, "/")
	step := 1
	if hasStep {
		n, err := strconv.Atoi(stepText)
		if err != nil || n < 1 || n > f.hi {
			return nil, &fieldError{len(span) + 1, fmt.Sprintf("the step %q is not a whole number from 1 to %d", stepText, f.hi)}
		}
		step = n
	}
	lo, hi := f.lo, f.hi
	switch {
	case span == "*" || f.any && span == "?":
		if f.hi == 7 {
			hi = 6 // every day once: 7 is Sunday again
		}
	default:
		a, b, isRange := strings.Cut(span, "-")
		var err *fieldError
		if lo, err = f.value(a, 0); err != nil {
			return nil, err
		}
		hi = lo
		if hasStep {
			hi = f.hi
		}
		if isRange {
			if hi, err = f.value(b, len(a)+1); err != nil {
				return nil, err
			}
			if hi < lo {
				return nil, &fieldError{0, fmt.Sprintf("the range %s ends before it starts", span)}
			}
		}
	}
	return f.ranges(lo, hi, step), nil
}

// value parses a number or a name of the field, at offset in the item.
func (f cronField) value(s string, offset int) (int, *fieldError) {
	for i, name := range f.names {
		if strings.EqualFold(s, name) {
			return f.lo + i, nil
		}
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		what := fmt.Sprintf("%q is not a number", s)
		if len(f.names) > 0 {
			what += " or a name such as " + strings.ToUpper(f.names[0])
		}
		return 0, &fieldError{offset, what}
	}
	if n < f.lo || n > f.hi {
		return 0, &fieldError{offset, fmt.Sprintf("%d is out of range %d-%d", n, f.lo, f.hi)}
	}
	return n, nil
}

// ranges is lo-hi/step in Temporal's terms. A day of week of 7 is Sunday,
// Temporal's 0.
func (f cronField) ranges(lo, hi, step int) []client.ScheduleRange {
	if f.hi != 7 || hi < 7 {
		return []client.ScheduleRange{{Start: lo, End: hi, Step: step}}
	}
	var out []client.ScheduleRange
	if (7-lo)%step == 0 {
		out = append(out, client.ScheduleRange{Start: 0, End: 0, Step: 1})
	}
	if lo <= 6 {
		out = append(out, client.ScheduleRange{Start: lo, End: 6, Step: step})
	}
	return out
}

// calendars are the Temporal calendar specs of the expression: one, or
// two when both day fields are restricted (either day matches).
func (c cronExpr) calendars(comment string) []client.ScheduleCalendarSpec {
	base := client.ScheduleCalendarSpec{
		Second:     []client.ScheduleRange{{Start: 0, End: 0, Step: 1}},
		Minute:     c.fields[0],
		Hour:       c.fields[1],
		DayOfMonth: c.fields[2],
		Month:      c.fields[3],
		DayOfWeek:  c.fields[4],
		Comment:    comment,
	}
	if c.star[2] || c.star[4] {
		return []client.ScheduleCalendarSpec{base}
	}
	byMonthDay, byWeekDay := base, base
	byMonthDay.DayOfWeek = []client.ScheduleRange{{Start: 0, End: 6, Step: 1}}
	byWeekDay.DayOfMonth = []client.ScheduleRange{{Start: 1, End: 31, Step: 1}}
	return []client.ScheduleCalendarSpec{byMonthDay, byWeekDay}
}
