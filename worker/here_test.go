package worker_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/api/enums/v1"
	"go.temporal.io/api/history/v1"

	"github.com/porch-pipelines/porch/compiler/plan"
	"github.com/porch-pipelines/porch/worker"
)

// stepEvents are the events of a closed step workflow's history.
func stepEvents(t *testing.T, workflowID string) []*history.HistoryEvent {
	t.Helper()
	var out []*history.HistoryEvent
	it := temporalClient.GetWorkflowHistory(context.Background(), workflowID, "", false, enums.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		e, err := it.Next()
		require.NoError(t, err)
		out = append(out, e)
	}
	return out
}

// scheduled are the task queues of the activities a history scheduled.
func scheduled(events []*history.HistoryEvent) []string {
	var queues []string
	for _, e := range events {
		if a := e.GetActivityTaskScheduledEventAttributes(); a != nil {
			queues = append(queues, a.GetActivityType().GetName()+" on "+a.GetTaskQueue().GetName())
		}
	}
	return queues
}

// markers counts the local activities a history recorded.
func markers(events []*history.HistoryEvent) int {
	n := 0
	for _, e := range events {
		if e.GetEventType() == enums.EVENT_TYPE_MARKER_RECORDED && e.GetMarkerRecordedEventAttributes().GetMarkerName() == "LocalActivity" {
			n++
		}
	}
	return n
}

// TestAShortCommandRunsInItsWorkflowAndALongOneMovesToAnActivity runs a
// step of a moment and one of a few seconds, both on the workflow's own
// queue: the first runs in a local activity of its workflow (no activity
// in its history), the second moves out of it after its budget, and the
// UI then shows it as a pending RunCommand on the worker's own queue.
func TestAShortCommandRunsInItsWorkflowAndALongOneMovesToAnActivity(t *testing.T) {
	home := t.TempDir()
	w := startWorker(t, home)
	t.Cleanup(w.Stop)
	dir := t.TempDir()
	path := filepath.Join(dir, "pipeline.yml")
	require.NoError(t, os.WriteFile(path, []byte(`type: pipeline
jobs:
  quick:
    outputs:
      out:
        type: uri_folder
    command: echo quick > ${{outputs.out}}/said.txt
  long:
    outputs:
      out:
        type: uri_folder
    command: sleep 4; echo long > ${{outputs.out}}/said.txt
`), 0o644))
	h := &harness{t: t, home: home}
	run := h.start(compile(t, path, nil))
	long := run.GetID() + "/long"

	node := plan.NodeTaskQueue(w.Node())
	require.Eventually(t, func() bool {
		desc, err := temporalClient.DescribeWorkflowExecution(context.Background(), long, "")
		if err != nil {
			return false
		}
		for _, pa := range desc.GetPendingActivities() {
			if pa.GetActivityType().GetName() == "RunCommand" && pa.GetState() == enums.PENDING_ACTIVITY_STATE_STARTED {
				assert.Equal(t, node, pa.GetActivityOptions().GetTaskQueue().GetName(), "the moved command is followed on its worker's queue")
				return true
			}
		}
		return false
	}, 30*time.Second, 100*time.Millisecond, "the long step shows a running RunCommand once it moved")

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	require.NoError(t, run.Get(ctx, nil))
	for _, step := range []string{"quick", "long"} {
		b, err := os.ReadFile(filepath.Join(h.localPath(fmt.Sprintf("azureml://datastores/workspaceblobstore/paths/azureml/%s/%s/out/", run.GetID(), step)), "said.txt"))
		require.NoError(t, err)
		assert.Equal(t, step+"\n", string(b))
	}

	quick := stepEvents(t, run.GetID()+"/quick")
	assert.Equal(t, 1, markers(quick), "the quick step ran in a local activity")
	assert.Empty(t, scheduled(quick), "and scheduled no activity")
	longEvents := stepEvents(t, long)
	assert.Equal(t, 1, markers(longEvents))
	assert.Equal(t, []string{"RunCommand on " + node}, scheduled(longEvents), "the long step was followed, once, on its worker's queue")
	st := steps(t, run.GetID())
	assert.EqualValues(t, 1, st["long"].Attempt, "a moved command is still the step's first attempt")
	assertCleanHistory(t, long)
	record(t, "v3-here", run.GetID())
}

// TestAKilledWorkersLocalCommandRunsAgainOnTheOther kills (SIGKILL) the
// worker process running a command in a local activity, once while the
// command is in its budget and once after it moved: either way the
// command dies with its worker and the step runs again on the other
// worker, whose lines alone are in the output.
func TestAKilledWorkersLocalCommandRunsAgainOnTheOther(t *testing.T) {
	for _, tc := range []struct {
		name  string
		moved bool
		// attempt is the step's attempt that succeeds.
		attempt int32
	}{
		// The workflow task the command ran in times out, and the
		// other worker runs the step's workflow task again, from the
		// local activity: its first attempt, again.
		{name: "in its local activity", attempt: 1},
		// The activity that follows it times out (its heartbeat), and
		// the step schedules its second attempt.
		{name: "after it moved", moved: true, attempt: 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			home := t.TempDir()
			procs := map[int]string{}
			for _, node := range []string{"first", "second"} {
				procs[startRoutedWorkerProcess(t, home, "", node, worker.Options{Workflows: true}).Process.Pid] = node
			}
			c := newAppendCase(t, "", "0.1")
			h := &harness{t: t, home: home}
			run := h.start(compile(t, c.path, nil))
			step := run.GetID() + "/append"
			pid := c.firstAttempt(t, 0)
			victim := parentOf(t, pid)
			node, ok := procs[victim]
			require.True(t, ok, "the step's shell is a child of a worker process")
			if tc.moved {
				require.Eventually(t, func() bool {
					desc, err := temporalClient.DescribeWorkflowExecution(context.Background(), step, "")
					return err == nil && len(desc.GetPendingActivities()) == 1 &&
						desc.GetPendingActivities()[0].GetActivityOptions().GetTaskQueue().GetName() == plan.NodeTaskQueue(node)
				}, 30*time.Second, 50*time.Millisecond, "the command moves to an activity on its worker's queue")
			} else {
				b, _ := os.ReadFile(c.progress)
				require.Less(t, strings.Count(string(b), "\n"), 15, "the command is within its local activity's budget (2 s)")
			}
			require.NoError(t, syscall.Kill(victim, syscall.SIGKILL))
			assertPIDGoneWithin(t, pid, 5*time.Second)

			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			require.NoError(t, run.Get(ctx, nil), "the step runs again on the other worker")
			c.oneAttempt(t, h, run.GetID(), pid)
			assert.Equal(t, tc.attempt, steps(t, run.GetID())["append"].Attempt)
			if tc.moved {
				record(t, "v3-here-lost", run.GetID())
			}
		})
	}
}
