package replay_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	enums "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/client"

	"github.com/porch-pipelines/porch/internal/replay"
	"github.com/porch-pipelines/porch/workflows"
)

// fixtures are the recorded histories workflows' replay test replays.
var fixtures = filepath.Join("..", "..", "workflows", "testdata", "histories")

func load(t *testing.T, name string) *historypb.History {
	t.Helper()
	f, err := os.Open(filepath.Join(fixtures, name))
	require.NoError(t, err)
	defer f.Close()
	h, err := client.HistoryFromJSON(f, client.HistoryJSONOptions{})
	require.NoError(t, err)
	return h
}

func replayPorch(h *historypb.History) (replay.Result, error) {
	return replay.History(h, replay.Options{Register: workflows.Register})
}

// reason replays h and returns why it does not replay, checking that the
// reason is a short sentence and not the SDK's dump of the history.
func reason(t *testing.T, h *historypb.History) string {
	t.Helper()
	_, err := replayPorch(h)
	var re *replay.Error
	require.True(t, errors.As(err, &re), "want a *replay.Error, got %v", err)
	assert.Less(t, len(re.Reason), 250, "a reason is one short sentence")
	for _, noise := range []string{"Payloads", "TMPRL", "\n", "payloads", "EventTime"} {
		assert.NotContains(t, re.Reason, noise)
	}
	return re.Reason
}

func TestReplayRecordedHistories(t *testing.T) {
	for _, name := range []string{"v1-hello-pipeline.json", "v1-hello-b.json", "v2-sweep-path-tune.json"} {
		res, err := replayPorch(load(t, name))
		require.NoError(t, err, name)
		assert.False(t, res.Running, name)
		assert.Empty(t, res.Skipped, name)
		assert.Positive(t, res.Events, name)
	}
}

func TestReplayRunningHistoryAsFarAsItGoes(t *testing.T) {
	// The catalogue workflow never ends: its fixture is a running history.
	res, err := replayPorch(load(t, "v1-catalog.json"))
	require.NoError(t, err)
	assert.True(t, res.Running)
}

func TestReplayWithItsWorkflowID(t *testing.T) {
	res, err := replay.History(load(t, "v1-hello-pipeline.json"), replay.Options{
		WorkflowID: "hello-z7clquk9", RunID: "01a20362-cba3-797c-a97d-eb556b4ae6a5", Register: workflows.Register})
	require.NoError(t, err)
	assert.False(t, res.Running)
}

func TestReasonChildWorkflowTypeChanged(t *testing.T) {
	assert.Equal(t, `the history has child workflow "RunStep" (id "hello-z7clquk9/a") at event 5, `+
		`but this build starts child workflow "CommandStep" there`,
		reason(t, load(t, "bad-hello-pipeline-step-type-changed.json")))
}

func TestReasonActivityRenamed(t *testing.T) {
	h := load(t, "v1-hello-b.json")
	for _, e := range h.Events {
		if a := e.GetActivityTaskScheduledEventAttributes(); a != nil {
			a.ActivityType.Name = "RunCommandV2"
		}
	}
	assert.Equal(t, `the history has activity "RunCommandV2" at event 5, but this build schedules activity "RunCommand" there`,
		reason(t, h))
}

func TestReasonExtraCommand(t *testing.T) {
	// Cut after the first workflow task: the code schedules an activity
	// the history never recorded.
	h := load(t, "v1-hello-b.json")
	h.Events = h.Events[:4]
	require.Equal(t, enums.EVENT_TYPE_WORKFLOW_TASK_COMPLETED, h.Events[3].EventType)
	assert.Equal(t, `this build schedules activity "RunCommand" where the history has no such event`, reason(t, h))
}

func TestReasonNewerVersion(t *testing.T) {
	h := load(t, "v2-sweep-path-tune.json")
	changed := false
	for _, e := range h.Events {
		if a := e.GetMarkerRecordedEventAttributes(); a != nil && a.MarkerName == "Version" {
			a.Details["version"].Payloads[0].Data = []byte("7")
			changed = true
		}
	}
	require.True(t, changed, "the fixture has a GetVersion marker")
	assert.Equal(t, `the history has version 7 of change "sweep-output-path" (workflow.GetVersion), `+
		`but this build supports versions up to 1: the history comes from a newer build`, reason(t, h))
}

func TestReasonUnknownWorkflowType(t *testing.T) {
	h := load(t, "v1-hello-b.json")
	h.Events[0].GetWorkflowExecutionStartedEventAttributes().WorkflowType.Name = "CommandStepV9"
	assert.Equal(t, `this build has no workflow type "CommandStepV9" (it has Catalog, CommandStep, ParallelStep, Pipeline, PlanStore, Quota, ReusedStep, SweepStep)`,
		reason(t, h))
}

func TestReasonMissingEvents(t *testing.T) {
	h := load(t, "v1-hello-b.json")
	h.Events = append(h.Events[:5], h.Events[len(h.Events)-1])
	assert.Equal(t, "the history is malformed: event 11 comes where event 6 should (events are missing or out of order)", reason(t, h))
}

func TestNotAWholeHistory(t *testing.T) {
	assert.Equal(t, "the history has no events", reason(t, &historypb.History{}))

	h := load(t, "v1-hello-b.json")
	h.Events = h.Events[1:]
	assert.Equal(t, "the history does not begin with the workflow's start (its first event is WorkflowTaskScheduled): "+
		"it is not a whole history", reason(t, h))

	h = load(t, "v1-hello-b.json")
	h.Events = h.Events[:2]
	res, err := replayPorch(h)
	require.NoError(t, err)
	assert.Equal(t, "no workflow task has run yet", res.Skipped)
	assert.True(t, res.Running)
}

func TestMalformedEventsNeverPanic(t *testing.T) {
	// Every event of a history stripped of its attributes in turn: each
	// is refused with an error, none crashes.
	for i := 1; i < 11; i++ {
		h := load(t, "v1-hello-b.json")
		h.Events[i].Attributes = nil
		require.NotPanics(t, func() { _, _ = replayPorch(h) }, "event %d without attributes", i+1)
	}
}

func TestExplainUnknownMessageIsShortened(t *testing.T) {
	long := "[TMPRL1100] something new: " + strings.Repeat("x", 1000) + "\nsecond line"
	got := replay.Explain(errors.New(long), &historypb.History{})
	assert.True(t, strings.HasPrefix(got, "the history does not match this build's workflow code: something new: xxx"), got)
	assert.LessOrEqual(t, len(got), 400)
	assert.NotContains(t, got, "second line")
}
