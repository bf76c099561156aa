package worker_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/api/enums/v1"

	"github.com/porch-pipelines/porch/activities/reuse"
	"github.com/porch-pipelines/porch/worker"
)

// TestAWorkerKilledWhileDecidingReuseCostsTheHeartbeatTimeout kills
// (SIGKILL) the worker that is hashing a step's large input to decide its
// reuse: the decision runs again on the other worker once the step's
// heartbeat timeout (30 s for a command step) has passed, and the step
// runs; it waited two hours. The run's DAG is on a worker that runs
// workflows only, which declines to decide on its own (DecideReuseHere):
// the decision is the heartbeating DecideReuse activity, on the victim.
func TestAWorkerKilledWhileDecidingReuseCostsTheHeartbeatTimeout(t *testing.T) {
	const heartbeat = 30 * time.Second // a command step's
	home := t.TempDir()
	w, err := worker.Start(temporalClient, worker.Options{Home: home, Workflows: true}) // workflows only
	require.NoError(t, err)
	t.Cleanup(w.Stop)
	victim := startWorkerProcess(t, home, "", "victim")

	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	require.NoError(t, os.MkdirAll(data, 0o755))
	// A sparse input of 4 GiB: hashing it takes seconds, and no disk.
	big := filepath.Join(data, "big.bin")
	require.NoError(t, os.WriteFile(big, nil, 0o644))
	require.NoError(t, os.Truncate(big, 4<<30))
	path := filepath.Join(dir, "pipeline.yml")
	require.NoError(t, os.WriteFile(path, []byte(`type: pipeline
jobs:
  use:
    command: ls -l ${{inputs.data}}
    inputs:
      data:
        type: uri_folder
        path: ./data
`), 0o644))
	h := &harness{t: t, home: home}
	run := h.start(compileReusable(t, path, nil))

	// Waits for the victim to be hashing, then starts the survivor and
	// kills the victim.
	require.Eventually(t, func() bool {
		d, err := temporalClient.DescribeWorkflowExecution(context.Background(), run.GetID(), "")
		if err != nil {
			return false
		}
		for _, pa := range d.GetPendingActivities() {
			if pa.GetActivityType().GetName() == reuse.DecideReuseName && pa.GetState() == enums.PENDING_ACTIVITY_STATE_STARTED {
				return pa.GetLastWorkerIdentity() == "victim"
			}
		}
		return false
	}, time.Minute, 20*time.Millisecond, "the victim decides the step's reuse")
	startWorkerProcess(t, home, "", "survivor")
	require.NoError(t, victim.Process.Kill())
	killed := time.Now()

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	require.NoError(t, run.Get(ctx, nil), "the step runs")
	var started, scheduled int64
	it := temporalClient.GetWorkflowHistory(ctx, run.GetID(), "", false, enums.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		e, err := it.Next()
		require.NoError(t, err)
		if a := e.GetActivityTaskScheduledEventAttributes(); a != nil && a.GetActivityType().GetName() == reuse.DecideReuseName {
			scheduled = e.GetEventId()
			assert.Equal(t, heartbeat, a.GetHeartbeatTimeout().AsDuration(), "the step's heartbeat timeout")
		}
		if a := e.GetActivityTaskStartedEventAttributes(); a != nil && a.GetScheduledEventId() == scheduled {
			started = e.GetEventId()
			assert.Equal(t, "survivor", a.GetIdentity(), "the decision ran again on the other worker")
			assert.Equal(t, int32(2), a.GetAttempt())
			took := e.GetEventTime().AsTime().Sub(killed)
			t.Logf("the decision started again %s after the kill", took.Round(100*time.Millisecond))
			assert.Less(t, took, heartbeat+10*time.Second, "within the heartbeat timeout and a few seconds")
		}
	}
	require.NotZero(t, started, "the run decided the step's reuse")
	st := steps(t, run.GetID())
	assert.Equal(t, "first run", st["use"].Reuse.Reason, fmt.Sprintf("%+v", st["use"].Reuse))
}
