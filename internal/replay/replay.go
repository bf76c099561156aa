// Package replay replays Temporal histories against this build's workflow
// code, as a worker of this build would on picking them up, and says in one
// sentence why a history does not replay.
package replay

import (
	"fmt"
	"io"
	"log/slog"

	enums "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	sdklog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
)

// Options says what is known of the execution a history belongs to.
type Options struct {
	// WorkflowID and RunID are the execution's, "" when unknown (the SDK
	// then replays it under ids of its own; porch's workflows do not read
	// them).
	WorkflowID, RunID string
	// Register registers the workflows to replay against.
	Register func(worker.WorkflowRegistry)
}

// Result is what replaying one history did.
type Result struct {
	// Events is the number of events in the history.
	Events int
	// Running says the history has not ended: it replayed as far as it
	// goes.
	Running bool
	// Skipped says why nothing was replayed, "" when the history was.
	Skipped string
}

// Error is a history this build does not replay.
type Error struct {
	// Reason says in one sentence what differs, or what is wrong with the
	// history.
	Reason string
	// Cause is the SDK's error, in full; nil when porch refused the
	// history before replaying it.
	Cause error
}

func (e *Error) Error() string { return e.Reason }

func (e *Error) Unwrap() error { return e.Cause }

// minEvents is the shortest history the SDK replays: the start, and a
// workflow task scheduled and started.
const minEvents = 3

// History replays h. A history that does not replay returns an *Error. It
// never panics, whatever h holds.
func History(h *historypb.History, opts Options) (res Result, err error) {
	events := h.GetEvents()
	res.Events = len(events)
	if len(events) == 0 {
		return res, &Error{Reason: "the history has no events"}
	}
	if t := events[0].GetEventType(); t != enums.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED ||
		events[0].GetWorkflowExecutionStartedEventAttributes().GetWorkflowType().GetName() == "" {
		return res, &Error{Reason: fmt.Sprintf("the history does not begin with the workflow's start (its first event is %s): "+
			"it is not a whole history", eventName(t))}
	}
	res.Running = !closed(events[len(events)-1].GetEventType())
	if len(events) < minEvents {
		res.Skipped = "no workflow task has run yet"
		return res, nil
	}
	defer func() {
		// The SDK trusts a history's shape; one edited by hand can make
		// it panic outside workflow code.
		if r := recover(); r != nil {
			err = &Error{Reason: fmt.Sprintf("the history is malformed: replaying it failed with %v", r)}
		}
	}()
	r := worker.NewWorkflowReplayer()
	if opts.Register != nil {
		opts.Register(r)
	}
	logger := sdklog.NewStructuredLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))
	id := opts.WorkflowID
	if recorded := events[0].GetWorkflowExecutionStartedEventAttributes().GetWorkflowId(); recorded != "" {
		// The history's own id, as a worker replays it: a run started
		// without a run id takes its workflow id as one.
		id = recorded
	}
	err = r.ReplayWorkflowHistoryWithOptions(logger, h, worker.ReplayWorkflowHistoryOptions{
		OriginalExecution: workflow.Execution{ID: id, RunID: opts.RunID},
	})
	if err != nil {
		return res, &Error{Reason: Explain(err, h), Cause: err}
	}
	return res, nil
}

// closed says whether an execution whose last event is t has ended.
func closed(t enums.EventType) bool {
	switch t {
	case enums.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED, enums.EVENT_TYPE_WORKFLOW_EXECUTION_FAILED,
		enums.EVENT_TYPE_WORKFLOW_EXECUTION_CANCELED, enums.EVENT_TYPE_WORKFLOW_EXECUTION_TERMINATED,
		enums.EVENT_TYPE_WORKFLOW_EXECUTION_TIMED_OUT, enums.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW:
		return true
	}
	return false
}
