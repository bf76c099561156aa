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
	"go.temporal.io/api/workflowservice/v1"
)

// TestParallelScale runs one parallel step of PORCH_SCALE mini-batches (a
// trivial script, one file each) on a worker process of its own, and
// reports the duration, the step's continue-as-new runs and their longest
// history, and the worker's peak RSS. It takes minutes, so it runs only when
// asked:
//
//	PORCH_SCALE=100000 go test ./worker -run TestParallelScale -v -timeout 60m
func TestParallelScale(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("PORCH_SCALE"))
	if n <= 0 {
		t.Skip("set PORCH_SCALE=<mini-batches> to run the scale test")
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
	resp, err := temporalClient.ListWorkflow(context.Background(), &workflowservice.ListWorkflowExecutionsRequest{
		Query: "WorkflowId = '" + run.GetID() + "/score'",
	})
	require.NoError(t, err)
	longest := int64(0)
	for _, e := range resp.Executions {
		longest = max(longest, e.HistoryLength)
	}
	out := h.localPath("azureml://datastores/workspaceblobstore/paths/azureml/" + run.GetID() + "/score/scores/parallel_run_step.txt")
	got := len(lines(t, out))
	t.Logf("%d mini-batches in %s (%.2f ms each); %d runs of the step workflow, longest history %d events; worker peak RSS %s; %d result lines",
		n, took.Round(time.Second), float64(took.Microseconds())/1000/float64(n), len(resp.Executions), longest, hwm, got)
	require.Equal(t, n, got)
	require.Less(t, longest, int64(10240), "no run comes near Temporal's history warning (10,240 events)")
}
