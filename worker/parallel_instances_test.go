package worker_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/api/enums/v1"

	"github.com/porch-pipelines/porch/compiler/plan"
	"github.com/porch-pipelines/porch/worker"
)

// overlapScript logs when each mini-batch starts and ends, with the pid of
// the worker that runs its process (the entry-script processes' parent),
// to events.log, with the OMP_NUM_THREADS and the number of cores it
// sees. A mini-batch waits (up to 20 s) until its worker has
// started two, so the first two on a node surely overlap when the node
// runs two at once.
const overlapScript = `import argparse, os, time

args = None

def init():
    global args
    p = argparse.ArgumentParser()
    p.add_argument("--state", required=True)
    args, _ = p.parse_known_args()

def log(event):
    with open(os.path.join(args.state, "events.log"), "a") as f:
        f.write("%s %d %d %s %d\n" % (event, os.getppid(), os.getpid(),
            os.environ.get("OMP_NUM_THREADS", "-"), len(os.sched_getaffinity(0))))

def started_here():
    with open(os.path.join(args.state, "events.log")) as f:
        return sum(1 for l in f if l.startswith("start %d " % os.getppid()))

def run(mini_batch):
    log("start")
    deadline = time.time() + 20
    while started_here() < 2 and time.time() < deadline:
        time.sleep(0.02)
    time.sleep(0.2)
    log("end")
    return [os.path.basename(p) for p in mini_batch]
`

// pollers says whether every one of nodes polls queue for activities.
func pollers(t *testing.T, queue string, nodes ...string) bool {
	t.Helper()
	resp, err := temporalClient.DescribeTaskQueue(context.Background(), queue, enums.TASK_QUEUE_TYPE_ACTIVITY)
	require.NoError(t, err)
	seen := map[string]bool{}
	for _, p := range resp.GetPollers() {
		seen[p.GetIdentity()] = true
	}
	for _, n := range nodes {
		if !seen[n] {
			return false
		}
	}
	return true
}

// TestAParallelStepSpreadsOverItsInstances runs a parallel step with
// instance_count 2 and max_concurrency_per_instance 2 on a kubernetes
// compute served by two worker processes, each with room for one instance
// of the step's type. Each holds one instance and runs two mini-batches at
// once, never more; before, each mini-batch held a whole instance, so a
// worker ran one at a time.
func TestAParallelStepSpreadsOverItsInstances(t *testing.T) {
	needPython(t)
	const compute = "spread"
	home := t.TempDir()
	w := startWorker(t, home) // workflows only: the step runs on the kubernetes compute
	t.Cleanup(w.Stop)
	cat := registerRouting(t, compute)
	nodes := []string{"node-a", "node-b"}
	for _, node := range nodes {
		startRoutedWorkerProcess(t, home, compute, node, worker.Options{
			InstanceTypes: []string{compute + "-a"}, Labels: []plan.Label{{Key: "zone", Value: "a"}},
			Capacity: plan.ResourceList{MilliCPU: 1000, MemoryBytes: 1 << 30}})
	}
	// Waits for both workers to poll the type's queue: one slow to start
	// would find every mini-batch done by the other.
	require.Eventually(t, func() bool {
		return pollers(t, plan.InstanceTaskQueue(compute, compute+"-a"), nodes...)
	}, time.Minute, 50*time.Millisecond, "both workers poll the instance type's queue")

	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	for _, d := range []string{"data", "src", "state"} {
		require.NoError(t, os.MkdirAll(filepath.Join(dir, d), 0o755))
	}
	files := names("f", 12)
	for _, name := range files {
		require.NoError(t, os.WriteFile(filepath.Join(dir, "data", name), []byte(name), 0o644))
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, "src", "score.py"), []byte(overlapScript), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(state, "events.log"), nil, 0o644))
	src := fmt.Sprintf(`type: pipeline
jobs:
  score:
    type: parallel
    compute: azureml:%s
    resources:
      instance_type: %s-a
      instance_count: 2
    inputs:
      data:
        type: uri_folder
        path: ./data
    outputs:
      scores:
        type: uri_folder
    input_data: ${{inputs.data}}
    mini_batch_size: "1"
    max_concurrency_per_instance: 2
    task:
      type: run_function
      code: ./src
      entry_script: score.py
      program_arguments: --state %s
      append_row_to: ${{outputs.scores}}
`, compute, compute, state)
	p := compileAgainst(t, dir, src, cat)
	h := &harness{t: t, home: home}
	run := h.start(p)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	require.NoError(t, run.Get(ctx, nil))

	batches := map[string]int{}
	for _, r := range processed(t, h.stepLogs(run.GetID())) {
		assert.Equal(t, "succeeded", r[2])
		batches[r[3]]++
	}
	assert.Len(t, batches, 2, "both instances ran mini-batches: %v", batches)
	assert.Positive(t, batches["node-a"], "%v", batches)
	assert.Positive(t, batches["node-b"], "%v", batches)

	// Mini-batches running at once on each worker, from the event order.
	running, most := map[string]int{}, map[string]int{}
	events := lines(t, filepath.Join(state, "events.log"))
	require.Len(t, events, 2*len(files))
	for _, e := range events {
		f := strings.Fields(e)
		require.Len(t, f, 5, "event %q", e)
		// The type's 1 CPU limit: one core, shared by 2 processes.
		assert.Equal(t, []string{"1", "1"}, f[3:], "OMP_NUM_THREADS and cores of %q", e)
		if f[0] == "start" {
			running[f[1]]++
		} else {
			running[f[1]]--
		}
		most[f[1]] = max(most[f[1]], running[f[1]])
	}
	require.Len(t, most, 2, "two workers ran entry scripts")
	for worker, n := range most {
		assert.Equal(t, 2, n, "worker %s ran max_concurrency_per_instance mini-batches at once, no more", worker)
	}
	// The replay fixture of a step running as instances comes from this
	// run:
	//
	//	PORCH_RECORD_HISTORIES=1 go test ./worker -run TestAParallelStepSpreadsOverItsInstances
	if os.Getenv("PORCH_RECORD_HISTORIES") != "" {
		recordRun(t, filepath.Join("..", "workflows", "testdata", "histories"), "v1-parallel-instances", run.GetID())
	}
}
