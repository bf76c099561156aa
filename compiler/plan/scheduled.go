package plan

import (
	"strings"
	"time"
)

// The references Azure ML fills in a scheduled job's inputs as each run
// starts, spelled as porch schedule create writes them into the plan.
const (
	// ScheduledRunName is the run's name: <schedule>-<trigger time>.
	ScheduledRunName = "${{name}}"
	// ScheduledTriggerTime is when the schedule fired, in UTC (RFC 3339).
	ScheduledTriggerTime = "${{creation_context.trigger_time}}"
)

// HasScheduledRefs says whether a literal input holds a scheduled
// job's reference.
func HasScheduledRefs(inputs []Input) bool {
	for _, in := range inputs {
		if in.Value.Kind == ValueLiteral && (strings.Contains(in.Value.Literal, ScheduledRunName) ||
			strings.Contains(in.Value.Literal, ScheduledTriggerTime)) {
			return true
		}
	}
	return false
}

// FillScheduled returns the inputs with the scheduled job's references
// in literals replaced by the run's name and the trigger time.
func FillScheduled(inputs []Input, run string, trigger time.Time) []Input {
	r := strings.NewReplacer(ScheduledRunName, run, ScheduledTriggerTime, trigger.UTC().Format(time.RFC3339))
	out := make([]Input, len(inputs))
	for i, in := range inputs {
		if in.Value.Kind == ValueLiteral {
			in.Value.Literal = r.Replace(in.Value.Literal)
		}
		out[i] = in
	}
	return out
}
