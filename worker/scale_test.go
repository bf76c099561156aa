package worker_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/api/enums/v1"
	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/api/workflowservice/v1"
)

// scaleDefault is TestParallelScale's size in make test: enough
// mini-batches for the step workflow to continue as new. Trivial
// mini-batches run 100 to an activity, so it takes tens of thousands:
// 2,000 kept one history of 288 events.
const scaleDefault = 40000

// History bounds every run of a step must stay under, far below Temporal's
// limits (51,200 events, 50 MB).
const (
	maxHistoryEvents = 10000
	maxHistoryBytes  = 10 << 20
)

// TestParallelScale runs one parallel step of trivial mini-batches (one file
// each) on a worker process of its own, and checks that every run of the
// step workflow (it continues as new as its history grows) and the
// pipeline's own stay under 10,000 events and 10 MB. It reports the
// duration, the runs and their largest history, and the worker's peak RSS.
// make test runs 40,000 mini-batches; PORCH_SCALE sets another size:
//
//	PORCH_SCALE=100000 go test ./worker -run TestParallelScale -v -timeout 60m
func TestParallelScale(t *testing.T) {
	n := scaleDefault
	if s := os.Getenv("PORCH_SCALE"); s != "" {
		var err error
		n, err = strconv.Atoi(s)
		require.NoError(t, err, "PORCH_SCALE is a number of mini-batches")
	}
	needPython(t)
	home := t.TempDir()
	w := startWorker(t, home) // workflows; the step runs on compute "scale"
	t.Cleanup(w.Stop)
	h := &harness{t: t, home: home}
	proc := startWorkerProcess(t, home, "scale", "scale-node")

	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	require.NoError(t, os.MkdirAll(filepath.Join(data), 0o755))
	for i := range n {
		sub := filepath.Join(data, fmt.Sprintf("%03d", i/1000))
		if i%1000 == 0 {
			require.NoError(t, os.MkdirAll(sub, 0o755))
		}
		require.NoError(t, os.WriteFile(filepath.Join(sub, fmt.Sprintf("%06d.txt", i)), []byte("x"), 0o644))
	}
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "src"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "src", "score.py"), []byte(trivialScript), 0o644))
	yml := `type: pipeline
jobs:
  score:
    type: parallel
    compute: azureml:scale
    inputs:
      data:
        type: uri_folder
        path: ./data
    outputs:
      scores:
        type: uri_folder
    input_data: ${{inputs.data}}
    mini_batch_size: "1"
    max_concurrency_per_instance: 8
    task:
      type: run_function
      code: ./src
      entry_script: score.py
      append_row_to: ${{outputs.scores}}
`
	path := filepath.Join(dir, "pipeline.yml")
	require.NoError(t, os.WriteFile(path, []byte(yml), 0o644))

	start := time.Now()
	run := h.start(compile(t, path, nil))
	require.NoError(t, run.Get(context.Background(), nil))
	took := time.Since(start)

	hwm := peakRSS(t, proc.Process.Pid)
	runs := closedRuns(t, run.GetID()+"/score")
	events, size := int64(0), int64(0)
	for _, e := range runs {
		events, size = max(events, e.HistoryLength), max(size, e.HistorySizeBytes)
	}
	top := closedRuns(t, run.GetID())
	out := h.localPath("azureml://datastores/workspaceblobstore/paths/azureml/" + run.GetID() + "/score/scores/parallel_run_step.txt")
	got := len(lines(t, out))
	t.Logf("%d mini-batches in %s (%.2f ms each); %d runs of the step workflow, largest history %d events, %d bytes; pipeline history %d events, %d bytes; worker peak RSS %s; %d result lines",
		n, took.Round(time.Second), float64(took.Microseconds())/1000/float64(n), len(runs), events, size,
		top[0].HistoryLength, top[0].HistorySizeBytes, hwm, got)
	require.Equal(t, n, got)
	if n >= scaleDefault {
		require.Greater(t, len(runs), 1, "the step continued as new")
	}
	require.Less(t, events, int64(maxHistoryEvents), "every run of the step stays under 10,000 events")
	require.Less(t, size, int64(maxHistoryBytes), "every run of the step stays under 10 MB")
	require.Less(t, top[0].HistoryLength, int64(maxHistoryEvents))
	require.Less(t, top[0].HistorySizeBytes, int64(maxHistoryBytes))
}

// closedRuns lists the runs of a workflow id once visibility shows them
// all closed (it is updated after the runs close).
func closedRuns(t *testing.T, id string) []*workflowpb.WorkflowExecutionInfo {
	t.Helper()
	var runs []*workflowpb.WorkflowExecutionInfo
	require.Eventually(t, func() bool {
		resp, err := temporalClient.ListWorkflow(context.Background(), &workflowservice.ListWorkflowExecutionsRequest{
			Query: "WorkflowId = '" + id + "'",
		})
		require.NoError(t, err)
		runs = resp.Executions
		for _, e := range runs {
			if e.GetStatus() == enums.WORKFLOW_EXECUTION_STATUS_RUNNING || e.HistoryLength == 0 {
				return false
			}
		}
		return len(runs) > 0
	}, time.Minute, 100*time.Millisecond, "visibility lists the closed runs of %s", id)
	return runs
}
