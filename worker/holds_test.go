package worker_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"

	"github.com/porch-pipelines/porch/activities/spread"
	"github.com/porch-pipelines/porch/compiler/plan"
	"github.com/porch-pipelines/porch/worker"
)

// logLines records a client's log lines: level, message and key values.
type logLines struct {
	mu    sync.Mutex
	lines []string
}

func (l *logLines) add(level, msg string, kv []any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, fmt.Sprintln(append([]any{level, msg}, kv...)...))
}

func (l *logLines) Debug(msg string, kv ...any) {}
func (l *logLines) Info(msg string, kv ...any)  { l.add("INFO", msg, kv) }
func (l *logLines) Warn(msg string, kv ...any)  { l.add("WARN", msg, kv) }
func (l *logLines) Error(msg string, kv ...any) { l.add("ERROR", msg, kv) }

func (l *logLines) matching(parts ...string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, line := range l.lines {
		all := true
		for _, p := range parts {
			all = all && strings.Contains(line, p)
		}
		if all {
			out = append(out, line)
		}
	}
	return out
}

// TestAParallelStepClosesWithItsHoldsEnded runs a parallel step as two
// held instances of a type, on one worker (its node): when the step has completed,
// Temporal shows no hold of it pending (they were released and ended
// before the step closed), and releasing them was logged as normal, at
// INFO, not as an activity error.
func TestAParallelStepClosesWithItsHoldsEnded(t *testing.T) {
	needPython(t)
	const compute = "holder"
	var logs logLines
	c, err := client.Dial(client.Options{HostPort: serverAddress, Logger: &logs})
	require.NoError(t, err)
	defer c.Close()
	home := t.TempDir()
	wf := startWorker(t, home) // workflows (and the catalogue's updates)
	t.Cleanup(wf.Stop)
	cat := registerRouting(t, compute)
	// The step's instances run on a worker whose log lines the test reads,
	// a node of its own: the workflows' worker in this process has the
	// process's default node name, and its node queue.
	w, err := worker.Start(c, worker.Options{Home: home, Computes: []string{compute}, Catalog: cat, Node: "holder-node",
		InstanceTypes: []string{compute + "-a"}, Labels: []plan.Label{{Key: "zone", Value: "a"}},
		Capacity: plan.ResourceList{MilliCPU: 2000, MemoryBytes: 2 << 30}})
	require.NoError(t, err)
	t.Cleanup(w.Stop)

	dir := t.TempDir()
	for _, d := range []string{"data", "src", "state"} {
		require.NoError(t, os.MkdirAll(filepath.Join(dir, d), 0o755))
	}
	files := names("f", 6)
	for i, name := range files {
		require.NoError(t, os.WriteFile(filepath.Join(dir, "data", name), []byte(fmt.Sprint(i)), 0o644))
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, "src", "score.py"), []byte(scoreScript), 0o644))
	p := compileAgainst(t, dir, fmt.Sprintf(`type: pipeline
jobs:
  score:
    type: parallel
    compute: azureml:%[1]s
    resources:
      instance_type: %[1]s-a
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
    task:
      type: run_function
      code: ./src
      entry_script: score.py
      program_arguments: --state %[2]s
      append_row_to: ${{outputs.scores}}
`, compute, filepath.Join(dir, "state")), cat)
	h := &harness{t: t, home: home}
	run := h.start(p)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	require.NoError(t, run.Get(ctx, nil))

	step := run.GetID() + "/score"
	d, err := c.DescribeWorkflowExecution(ctx, step, "")
	require.NoError(t, err)
	assert.Equal(t, enums.WORKFLOW_EXECUTION_STATUS_COMPLETED, d.GetWorkflowExecutionInfo().GetStatus())
	for _, pa := range d.GetPendingActivities() {
		assert.Failf(t, "a closed step has an activity pending", "%s %s", pa.GetActivityType().GetName(), pa.GetState())
	}
	holds, ended := 0, 0
	it := c.GetWorkflowHistory(ctx, step, "", false, enums.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	scheduled := map[int64]bool{}
	for it.HasNext() {
		e, err := it.Next()
		require.NoError(t, err)
		if a := e.GetActivityTaskScheduledEventAttributes(); a != nil && a.GetActivityType().GetName() == spread.HoldInstanceName {
			holds++
			scheduled[e.GetEventId()] = true
		}
		for _, id := range []int64{e.GetActivityTaskCompletedEventAttributes().GetScheduledEventId(),
			e.GetActivityTaskCanceledEventAttributes().GetScheduledEventId()} {
			if scheduled[id] {
				ended++
			}
		}
	}
	assert.Equal(t, 2, holds)
	assert.Equal(t, holds, ended, "every hold ended before the step closed")
	// The worker's log lines are written as its activities end: the last
	// hold's release may come a moment after the run.
	require.Eventually(t, func() bool { return len(logs.matching("INFO", "released")) == 2 }, 10*time.Second, 20*time.Millisecond,
		"each release is logged at INFO: %v", logs.matching("HoldInstance"))
	assert.Empty(t, logs.matching("ERROR", "HoldInstance"), "a release is no error")
	// The replay fixture of a step that waits for its released holds:
	//
	//	PORCH_RECORD_HISTORIES=1 go test ./worker -run TestAParallelStepClosesWithItsHoldsEnded
	if os.Getenv("PORCH_RECORD_HISTORIES") != "" {
		recordRun(t, filepath.Join("..", "workflows", "testdata", "histories"), "v2-parallel-holds-end", run.GetID())
	}
}
