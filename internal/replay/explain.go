package replay

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	enums "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
)

// The SDK reports nondeterminism in a sentence that quotes the history
// event and the command it expected in full, payloads included. Explain
// keeps what tells them apart: their kinds and the names of what they
// start. The patterns below follow the messages of go.temporal.io/sdk
// v1.50; a message it does not know is shortened, never dropped.
var (
	errorCode    = regexp.MustCompile(`^\[TMPRL\d+\]\s*`)
	mismatch     = regexp.MustCompile(`^nondeterministic workflow: history event is ([A-Za-z]+): `)
	commandStart = regexp.MustCompile(`, replay command is ([A-Za-z]+): `)
	extra        = regexp.MustCompile(`^nondeterministic workflow: extra replay command for ([A-Za-z]+): `)
	missing      = regexp.MustCompile(`^nondeterministic workflow: missing replay command for ([A-Za-z]+): `)
	notProduced  = regexp.MustCompile(`^During replay, a matching ([A-Za-z]+) command was expected in history event position (.*?)\. However`)
	gap          = regexp.MustCompile(`^missing history events, expectedNextEventID=(-?\d+) but receivedNextEventID=(-?\d+)`)
	versionLow   = regexp.MustCompile(`^Workflow code removed support of version (-?\d+)\.? for "(.*)" changeID\. The oldest supported version is (-?\d+)`)
	versionHigh  = regexp.MustCompile(`^Workflow code is too old to support version (-?\d+) for "(.*)" changeID\. The maximum supported version is (-?\d+)`)
	unknownType  = regexp.MustCompile(`^unable to find workflow type: (.*)\. Supported types: \[(.*)\]$`)
	failedTask   = regexp.MustCompile(`^replay workflow failed with failure: .*?\bmessage:\s*"((?:[^"\\]|\\.)*)"`)
	otherResult  = "replay workflow doesn't return the same result as the last event"
)

// quoted is a string as the SDK's messages quote it (Go and protobuf text).
const quoted = `"((?:[^"\\]|\\.)*)"`

// Fields of an event or a command, in the SDK's two ways of printing them:
// its own (Name:Value, ...) and protobuf text (name:"value").
var (
	fieldEventID      = regexp.MustCompile(`[(\s,]EventId:(\d+)`)
	fieldActivityType = regexp.MustCompile(`ActivityType:\(Name:([^,)]*)\)|activity_type:\s*\{\s*name:\s*` + quoted)
	fieldActivityID   = regexp.MustCompile(`ActivityId:([^,)]*)|activity_id:\s*` + quoted)
	fieldWorkflowType = regexp.MustCompile(`WorkflowType:\(Name:([^,)]*)\)|workflow_type:\s*\{\s*name:\s*` + quoted)
	fieldWorkflowID   = regexp.MustCompile(`WorkflowId:([^,)]*)|workflow_id:\s*` + quoted)
	fieldTimerID      = regexp.MustCompile(`TimerId:([^,)]*)|timer_id:\s*` + quoted)
	fieldMarkerName   = regexp.MustCompile(`MarkerName:([^,)]*)|marker_name:\s*` + quoted)
	fieldSignalName   = regexp.MustCompile(`SignalName:([^,)]*)|signal_name:\s*` + quoted)
	fieldOperation    = regexp.MustCompile(`Operation:([^,)]*)|operation:\s*` + quoted)
)

// maxFallback bounds a message Explain does not know, in characters.
const maxFallback = 300

// Explain says in one sentence what err, the SDK replayer's error on
// history h, means: which event of the history this build's workflow code
// does not reproduce, and what it does instead.
func Explain(err error, h *historypb.History) string {
	msg := strings.TrimSpace(err.Error())
	if m := failedTask.FindStringSubmatch(msg); m != nil {
		// A workflow task that failed carries the reason as a failure's
		// message.
		if s, uerr := strconv.Unquote(`"` + m[1] + `"`); uerr == nil {
			msg = s
		} else {
			msg = m[1]
		}
	}
	// The SDK marks what it finds out of step with history with a code.
	coded := errorCode.MatchString(msg)
	msg = errorCode.ReplaceAllString(msg, "")
	if s := explainMessage(msg, h); s != "" {
		return s
	}
	var panicked interface{ StackTrace() string }
	switch {
	case coded:
		return "the history does not match this build's workflow code: " + shorten(msg)
	case errors.As(err, &panicked):
		return "replaying it panicked (a malformed history, or a bug in the workflow code): " + shorten(msg)
	}
	return shorten(msg)
}

// explainMessage rewrites the SDK messages it knows, "" for others.
func explainMessage(msg string, h *historypb.History) string {
	if m := mismatch.FindStringSubmatchIndex(msg); m != nil {
		ev := item{kind: msg[m[2]:m[3]], text: msg[m[1]:]}
		// The event's text may quote anything (payloads): the command
		// is the last ", replay command is <CommandType>: " that names
		// a real command type.
		for _, c := range slices.Backward(commandStart.FindAllStringSubmatchIndex(msg, -1)) {
			kind := msg[c[2]:c[3]]
			if _, err := enums.CommandTypeFromString(kind); err == nil && c[0] > m[1] {
				ev.text = msg[m[1]:c[0]]
				cmd := item{kind: kind, text: msg[c[1]:]}
				return fmt.Sprintf("the history has %s%s, but this build %s there", ev.noun(), at(ev.eventID(h)), cmd.act())
			}
		}
	}
	if m := extra.FindStringSubmatchIndex(msg); m != nil {
		cmd := item{kind: msg[m[2]:m[3]], text: msg[m[1]:]}
		return fmt.Sprintf("this build %s where the history has no such event", cmd.act())
	}
	if m := missing.FindStringSubmatchIndex(msg); m != nil {
		ev := item{kind: msg[m[2]:m[3]], text: msg[m[1]:]}
		return fmt.Sprintf("the history has %s%s, which this build does not do there", ev.noun(), at(ev.eventID(h)))
	}
	if m := notProduced.FindStringSubmatch(msg); m != nil {
		id := ""
		if m[2] != "" {
			id = " (id " + m[2] + ")"
		}
		return fmt.Sprintf("the history has %s%s that this build's code does not make", sdkCommandNoun(m[1]), id)
	}
	if m := gap.FindStringSubmatch(msg); m != nil {
		return fmt.Sprintf("the history is malformed: event %s comes where event %s should (events are missing or out of order)", m[2], m[1])
	}
	if m := versionHigh.FindStringSubmatch(msg); m != nil {
		return fmt.Sprintf("the history has version %s of change %q (workflow.GetVersion), but this build supports versions "+
			"up to %s: the history comes from a newer build", m[1], m[2], m[3])
	}
	if m := versionLow.FindStringSubmatch(msg); m != nil {
		return fmt.Sprintf("the history has version %s of change %q (workflow.GetVersion), but this build supports versions "+
			"from %s only: it dropped the code that history needs", m[1], m[2], m[3])
	}
	if m := unknownType.FindStringSubmatch(msg); m != nil {
		types := strings.Split(m[2], ", ")
		slices.Sort(types)
		return fmt.Sprintf("this build has no workflow type %q (it has %s)", m[1], strings.Join(types, ", "))
	}
	if strings.HasPrefix(msg, otherResult) {
		events := h.GetEvents()
		last := events[len(events)-1]
		ev := item{kind: eventName(last.GetEventType())}
		return fmt.Sprintf("the history ends with %s%s, but this build's code does not end there", ev.noun(), at(last.GetEventId()))
	}
	return ""
}

// item is an event or a command as the SDK's message prints it.
type item struct {
	kind string // ActivityTaskScheduled, ScheduleActivityTask, ...
	text string // what follows "<kind>: "
}

// field returns re's first submatch in the item's text, unquoted.
func (it item) field(re *regexp.Regexp) string {
	m := re.FindStringSubmatch(it.text)
	for _, s := range m[min(1, len(m)):] {
		if s == "" {
			continue
		}
		if u, err := strconv.Unquote(`"` + s + `"`); err == nil {
			return u
		}
		return s
	}
	return ""
}

// eventID is the event's id: as printed, else found in h by the id of
// what it starts; 0 when unknown.
func (it item) eventID(h *historypb.History) int64 {
	if id, err := strconv.ParseInt(it.field(fieldEventID), 10, 64); err == nil {
		return id
	}
	t, err := enums.EventTypeFromString(it.kind)
	if err != nil {
		return 0
	}
	for _, e := range h.GetEvents() {
		if e.GetEventType() != t {
			continue
		}
		switch t {
		case enums.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
			if e.GetActivityTaskScheduledEventAttributes().GetActivityId() == it.field(fieldActivityID) {
				return e.GetEventId()
			}
		case enums.EVENT_TYPE_TIMER_STARTED:
			if e.GetTimerStartedEventAttributes().GetTimerId() == it.field(fieldTimerID) {
				return e.GetEventId()
			}
		case enums.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED:
			if e.GetStartChildWorkflowExecutionInitiatedEventAttributes().GetWorkflowId() == it.field(fieldWorkflowID) {
				return e.GetEventId()
			}
		}
	}
	return 0
}

// at is " at event N", "" for an unknown event.
func at(id int64) string {
	if id <= 0 {
		return ""
	}
	return fmt.Sprintf(" at event %d", id)
}

// noun names a history event: `activity "RunCommand"`.
func (it item) noun() string {
	t, _ := enums.EventTypeFromString(it.kind)
	switch t {
	case enums.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
		return fmt.Sprintf("activity %q", it.field(fieldActivityType))
	case enums.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED:
		return fmt.Sprintf("child workflow %q%s", it.field(fieldWorkflowType), idNote(it.field(fieldWorkflowID)))
	case enums.EVENT_TYPE_TIMER_STARTED:
		return "a timer"
	case enums.EVENT_TYPE_MARKER_RECORDED:
		n, _ := marker(it.field(fieldMarkerName))
		return n
	case enums.EVENT_TYPE_SIGNAL_EXTERNAL_WORKFLOW_EXECUTION_INITIATED:
		return fmt.Sprintf("signal %q to workflow %q", it.field(fieldSignalName), it.field(fieldWorkflowID))
	case enums.EVENT_TYPE_REQUEST_CANCEL_EXTERNAL_WORKFLOW_EXECUTION_INITIATED:
		return fmt.Sprintf("a cancel request to workflow %q", it.field(fieldWorkflowID))
	case enums.EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES:
		return "a search attribute update"
	case enums.EVENT_TYPE_WORKFLOW_PROPERTIES_MODIFIED:
		return "a memo update"
	case enums.EVENT_TYPE_ACTIVITY_TASK_CANCEL_REQUESTED:
		return "an activity's cancellation"
	case enums.EVENT_TYPE_TIMER_CANCELED:
		return "a timer's cancellation"
	case enums.EVENT_TYPE_NEXUS_OPERATION_SCHEDULED:
		return fmt.Sprintf("nexus operation %q", it.field(fieldOperation))
	case enums.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED:
		return "the workflow completing"
	case enums.EVENT_TYPE_WORKFLOW_EXECUTION_FAILED:
		return "the workflow failing"
	case enums.EVENT_TYPE_WORKFLOW_EXECUTION_CANCELED:
		return "the workflow ending canceled"
	case enums.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW:
		return "the workflow continuing as new"
	}
	return "a " + words(it.kind) + " event"
}

// act says what this build's code does with a command: `schedules
// activity "RunCommand"`.
func (it item) act() string {
	t, _ := enums.CommandTypeFromString(it.kind)
	switch t {
	case enums.COMMAND_TYPE_SCHEDULE_ACTIVITY_TASK:
		return fmt.Sprintf("schedules activity %q", it.field(fieldActivityType))
	case enums.COMMAND_TYPE_START_CHILD_WORKFLOW_EXECUTION:
		return fmt.Sprintf("starts child workflow %q", it.field(fieldWorkflowType))
	case enums.COMMAND_TYPE_START_TIMER:
		return "starts a timer"
	case enums.COMMAND_TYPE_RECORD_MARKER:
		_, act := marker(it.field(fieldMarkerName))
		return act
	case enums.COMMAND_TYPE_SIGNAL_EXTERNAL_WORKFLOW_EXECUTION:
		return fmt.Sprintf("signals workflow %q", it.field(fieldWorkflowID))
	case enums.COMMAND_TYPE_REQUEST_CANCEL_EXTERNAL_WORKFLOW_EXECUTION:
		return fmt.Sprintf("asks to cancel workflow %q", it.field(fieldWorkflowID))
	case enums.COMMAND_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES:
		return "updates search attributes"
	case enums.COMMAND_TYPE_MODIFY_WORKFLOW_PROPERTIES:
		return "updates the memo"
	case enums.COMMAND_TYPE_REQUEST_CANCEL_ACTIVITY_TASK:
		return "cancels an activity"
	case enums.COMMAND_TYPE_CANCEL_TIMER:
		return "cancels a timer"
	case enums.COMMAND_TYPE_SCHEDULE_NEXUS_OPERATION:
		return fmt.Sprintf("schedules nexus operation %q", it.field(fieldOperation))
	case enums.COMMAND_TYPE_COMPLETE_WORKFLOW_EXECUTION:
		return "completes the workflow"
	case enums.COMMAND_TYPE_FAIL_WORKFLOW_EXECUTION:
		return "fails the workflow"
	case enums.COMMAND_TYPE_CANCEL_WORKFLOW_EXECUTION:
		return "ends the workflow canceled"
	case enums.COMMAND_TYPE_CONTINUE_AS_NEW_WORKFLOW_EXECUTION:
		return "continues the workflow as new"
	}
	return "makes a " + words(it.kind) + " command"
}

// marker names the markers the SDK records: as found in history, and as
// what the code does.
func marker(name string) (noun, act string) {
	switch name {
	case "Version":
		return "a workflow.GetVersion marker", "calls workflow.GetVersion"
	case "SideEffect":
		return "a workflow.SideEffect result", "calls workflow.SideEffect"
	case "MutableSideEffect":
		return "a workflow.MutableSideEffect result", "calls workflow.MutableSideEffect"
	case "LocalActivity":
		return "a local activity", "runs a local activity"
	}
	return fmt.Sprintf("marker %q", name), fmt.Sprintf("records marker %q", name)
}

// sdkCommandNoun names the SDK's own command kinds ("Timer",
// "ChildWorkflow", ...).
func sdkCommandNoun(kind string) string {
	switch kind {
	case "Activity":
		return "an activity"
	case "ChildWorkflow":
		return "a child workflow"
	case "Timer":
		return "a timer"
	case "Marker":
		return "a marker"
	}
	return "a " + words(kind) + " command"
}

// idNote is ` (id "x")`, "" for no id.
func idNote(id string) string {
	if id == "" {
		return ""
	}
	return fmt.Sprintf(" (id %q)", id)
}

// eventName is an event type as the SDK prints it: ActivityTaskScheduled.
func eventName(t enums.EventType) string {
	if t == enums.EVENT_TYPE_UNSPECIFIED {
		return "none"
	}
	return t.String()
}

// words splits CamelCase into lower-case words: "timer fired".
func words(camel string) string {
	var b strings.Builder
	for i, r := range camel {
		if unicode.IsUpper(r) && i > 0 {
			b.WriteByte(' ')
		}
		b.WriteRune(unicode.ToLower(r))
	}
	return b.String()
}

// shorten keeps a message's first line, at most maxFallback characters.
func shorten(msg string) string {
	msg, _, _ = strings.Cut(msg, "\n")
	if utf8.RuneCountInString(msg) <= maxFallback {
		return msg
	}
	return string([]rune(msg)[:maxFallback]) + "..."
}
