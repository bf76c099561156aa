package worker_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/porch-pipelines/porch/worker"
	"github.com/porch-pipelines/porch/workflows"
)

// spotScore scores a file, except on a preemptible worker (a worker
// process whose node name starts with "spot"), where it records its pid
// and hangs until the worker is preempted.
const spotScore = `import os, sys, time

def init():
    pass

def run(mini_batch):
    node = os.environ.get("PORCH_TEST_WORKER_NODE", "")
    if node.startswith("spot"):
        with open(os.path.join(sys.argv[sys.argv.index("--state") + 1], node + ".pid"), "w") as f:
            f.write("%d" % os.getpid())
        time.sleep(600)
    return ["%s,%s" % (os.path.basename(p), node) for p in mini_batch]
`

// TestASpotParallelStepsMiniBatchMovesToDedicatedWorkers runs a spot
// parallel step whose one mini-batch hangs on preemptible workers: each
// is SIGTERMed in turn, and after the third preemption the mini-batch
// runs on the dedicated worker. The step's own activities (planning,
// finishing) stay on the spot queue, so a fourth preemptible worker
// finishes the step. The workers share one home, as nodes share a
// datastore.
//
// With PORCH_RECORD_HISTORIES=1 it also records the run's histories as the
// replay fixtures workflows/testdata/histories/v1-spot-parallel-*.json.
func TestASpotParallelStepsMiniBatchMovesToDedicatedWorkers(t *testing.T) {
	needPython(t)
	const compute = "spotp"
	home := t.TempDir()
	w := startWorker(t, home)
	t.Cleanup(w.Stop)
	spot, dedicated := true, false
	startRoutedWorkerProcess(t, home, compute, "dedicated", worker.Options{Preemptible: &dedicated})

	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	for _, d := range []string{"data", "src", "state"} {
		require.NoError(t, os.MkdirAll(filepath.Join(dir, d), 0o755))
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, "data", "a.txt"), []byte("1"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "src", "score.py"), []byte(spotScore), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "p.yml"), []byte(fmt.Sprintf(`type: pipeline
jobs:
  score:
    type: parallel
    compute: azureml:%s
    queue_settings: {job_tier: spot}
    inputs:
      data: {type: uri_folder, path: ./data}
    outputs:
      scores: {type: uri_folder}
    input_data: ${{inputs.data}}
    mini_batch_size: "1"
    retry_settings: {max_retries: 0}
    task:
      type: run_function
      code: ./src
      entry_script: score.py
      program_arguments: --state %s
      append_row_to: ${{outputs.scores}}
`, compute, state)), 0o644))
	h := &harness{t: t, home: home}
	run := h.start(compile(t, filepath.Join(dir, "p.yml"), nil))

	for i := range 3 {
		node := fmt.Sprintf("spot-%d", i)
		proc := startRoutedWorkerProcess(t, home, compute, node, worker.Options{Preemptible: &spot})
		var pid int
		// Waits for the mini-batch to hang on this preemptible worker.
		require.Eventually(t, func() bool {
			b, err := os.ReadFile(filepath.Join(state, node+".pid"))
			if err != nil {
				return false
			}
			pid, err = strconv.Atoi(strings.TrimSpace(string(b)))
			return err == nil
		}, time.Minute, 20*time.Millisecond, "the mini-batch runs on preemptible worker %d", i)
		require.NoError(t, proc.Process.Signal(syscall.SIGTERM))
		require.Eventually(t, func() bool { return processGone(pid) }, 30*time.Second, 20*time.Millisecond,
			"the preempted worker kills its entry-script processes")
	}
	startRoutedWorkerProcess(t, home, compute, "spot-3", worker.Options{Preemptible: &spot})

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	require.NoError(t, run.Get(ctx, nil), "the mini-batch finishes on the dedicated worker")
	st := steps(t, run.GetID())["score"]
	assert.True(t, st.Spot)
	v, err := temporalClient.QueryWorkflow(ctx, st.WorkflowID, "", workflows.SpotQuery)
	require.NoError(t, err)
	var spotState workflows.SpotState
	require.NoError(t, v.Get(&spotState))
	assert.Equal(t, workflows.SpotState{Preemptions: 3, Dedicated: true, Moved: 1}, spotState)
	rows := findFile(t, h.localPath(fmt.Sprintf("azureml://datastores/workspaceblobstore/paths/azureml/%s/score/", run.GetID())), "parallel_run_step.txt")
	assert.Equal(t, "a.txt,dedicated", strings.TrimSpace(rows))
	if os.Getenv("PORCH_RECORD_HISTORIES") != "" {
		recordRun(t, filepath.Join("..", "workflows", "testdata", "histories"), "v1-spot-parallel", run.GetID())
	}
}
