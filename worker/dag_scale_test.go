package worker_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/api/temporalproto"
	"go.temporal.io/sdk/converter"
	sdkworker "go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/porch-pipelines/porch/activities/runrecord"
	"github.com/porch-pipelines/porch/compiler/plan"
	"github.com/porch-pipelines/porch/workflows"
)

// A run's every history stays under maxHistoryEvents and maxHistoryBytes
// (scale_test.go), well under Temporal's limits.

// TestDAGScale runs a pipeline of chains of trivial command steps (each
// `true` in a real process, reading its predecessor's output) and one of
// steps fanning out from one root, on the embedded server, to success. Their
// plans are stored by reference and the DAG continues as new before its
// history nears Temporal's limits: the test prints steps/s and the
// process's peak RSS (server, worker and test), and asserts the largest
// history of the run's DAG. The sizes are PORCH_DAG_SCALE=<chains>x<length>
// (10,000 steps in 100 chains of 100 unless it says otherwise) and
// PORCH_DAG_FANOUT=<steps>; a quick look at a change:
//
//	PORCH_DAG_SCALE=10x30 PORCH_DAG_FANOUT=300 go test ./worker -run TestDAGScale -v
func TestDAGScale(t *testing.T) {
	chains, length := scaleSize(t, "PORCH_DAG_SCALE", "100x100")
	fanout := envInt(t, "PORCH_DAG_FANOUT", 1000)
	h := newHarness(t)
	t.Run(fmt.Sprintf("%dx%d", chains, length), func(t *testing.T) {
		h.runAtScale(t, chainsYAML(chains, length), chains*length, 0, nil)
	})
	t.Run(fmt.Sprintf("fanout-%d", fanout), func(t *testing.T) {
		h.runAtScale(t, fanoutYAML(fanout), fanout, 0, nil)
	})
}

// TestDAGContinuesAsNewWithItsState runs a small pipeline whose DAG
// continues as new after a few events (a chain, a fan-out and a nested
// pipeline): every step runs once, in order, the steps query answers for
// the whole run and the record is written once, at the end.
func TestDAGContinuesAsNewWithItsState(t *testing.T) {
	h := newHarness(t)
	yml := chainsYAML(2, 6) + `  nest:
    type: pipeline
    component: ./inner.yml
    inputs:
      x: ${{parent.jobs.c0s5.outputs.out}}
`
	inner := `type: pipeline
name: inner
inputs:
  x:
    type: uri_folder
jobs:
  copy:
    command: cat ${{inputs.x}}/* > ${{outputs.out}}/f
    inputs:
      x: ${{parent.inputs.x}}
    outputs:
      out:
`
	yml = strings.Replace(yml, "command: \"true\"", "command: date +%s%N > ${{outputs.out}}/t", -1)
	id, first, ref := h.runAtScale(t, yml, 13, 40, map[string]string{"inner.yml": inner})
	st := steps(t, id)
	require.Len(t, st, 13)
	prev := ""
	for i := range 6 {
		s := st[fmt.Sprintf("c0s%d", i)]
		require.Equal(t, workflows.StatusSucceeded, s.Status, s.Path)
		b, err := os.ReadFile(filepath.Join(h.localPath(s.Outputs[0].URI), "t"))
		require.NoError(t, err, "step %s wrote its output", s.Path)
		require.Greater(t, string(b), prev, "step %s ran after its predecessor", s.Path)
		prev = string(b)
	}
	require.Equal(t, workflows.StatusSucceeded, st["nest"].Status)
	record(t, "v2-continued", id)
	if os.Getenv("PORCH_RECORD_HISTORIES") != "" {
		// The latest execution restores a state and ends; the first
		// starts from the stored plan and continues as new.
		out := filepath.Join("..", "workflows", "testdata", "histories")
		writeExecution(t, id, first, filepath.Join(out, "v2-continued-first.json"))
		writeHistory(t, workflows.PlanChunkID(ref.Hash, 0), filepath.Join(out, "v2-plan-store.json"))
	}
}

// runAtScale runs a pipeline of n steps (beside the other files it
// reads) whose DAG continues as new past continueAfter events (0: porch's
// budget), checks every history of the
// run's DAG and returns the run's id, its first execution's and its
// plan's reference.
func (h *harness) runAtScale(t *testing.T, yml string, n, continueAfter int, files map[string]string) (string, string, workflows.PlanRef) {
	dir := t.TempDir()
	for name, body := range files {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644))
	}
	path := filepath.Join(dir, "pipeline.yml")
	require.NoError(t, os.WriteFile(path, []byte(yml), 0o644))
	began := time.Now()
	p := compile(t, path, nil)
	compiled := time.Since(began)
	ctx := context.Background()
	r := workflows.NewStartRequest(p, workflows.NewRunID(p), []byte(yml))
	r.Input.ContinueAfter = continueAfter
	input := payloadSize(t, r.Input)
	start := time.Now()
	require.NoError(t, r.StorePlan(ctx, temporalClient, workflows.PlanHolder{Run: r.Options.ID}))
	run, err := temporalClient.ExecuteWorkflow(ctx, r.Options, workflows.PipelineName, r.Input)
	require.NoError(t, err)
	wctx, cancel := context.WithTimeout(ctx, 30*time.Minute)
	defer cancel()
	require.NoError(t, run.Get(wctx, nil))
	took := time.Since(start)
	execs, events, size := histories(t, run.GetID())
	replayExecutions(t, run.GetID())
	t.Logf("%d steps: %.1f steps/s (%s; compiled in %s), start input %d bytes, %d executions of the DAG, largest history %d events, %.2f MB; peak RSS %s",
		n, float64(n)/took.Seconds(), took.Round(time.Millisecond), compiled.Round(time.Millisecond), input, execs, events, float64(size)/(1<<20), peakRSS(t, os.Getpid()))
	require.Less(t, input, 4096, "the start input names the plan, it does not carry it")
	require.Less(t, events, int64(maxHistoryEvents))
	require.Less(t, size, int64(maxHistoryBytes))
	rec := h.localPath(runrecord.URI(plan.DefaultDatastore, run.GetID(), ""))
	b, err := os.ReadFile(rec)
	require.NoError(t, err, "the run's record is written at its end")
	require.Equal(t, n, strings.Count(string(b), `"status": "succeeded"`), "every step succeeded, in the record")
	// What porch's readers read: every step, a page at a time, and the
	// graph from the stored plan.
	began = time.Now()
	st, err := workflows.QuerySteps(ctx, temporalClient, run.GetID(), time.Minute)
	require.NoError(t, err)
	require.Len(t, st, n, "the steps query answers every step, in pages")
	readSteps := time.Since(began)
	began = time.Now()
	g, err := workflows.RunGraph(ctx, temporalClient, run.GetID())
	require.NoError(t, err)
	require.Len(t, g.Nodes, n, "the graph has every step")
	t.Logf("read %d steps (%.1f MB of JSON) in %s, the graph (%.1f MB) in %s", n, float64(jsonSize(t, st))/(1<<20),
		readSteps.Round(time.Millisecond), float64(jsonSize(t, g))/(1<<20), time.Since(began).Round(time.Millisecond))
	return run.GetID(), run.GetRunID(), *r.Input.Plan
}

// replayExecutions replays every execution of a run's DAG against this
// build's workflows, as a worker picking them up would: the paths only
// large runs take (continuing as new, the running window) are checked
// here rather than by fixtures of thousands of events.
func replayExecutions(t *testing.T, id string) {
	ctx := context.Background()
	for runID, more := "", true; more; {
		desc, err := temporalClient.DescribeWorkflowExecution(ctx, id, runID)
		require.NoError(t, err)
		exec := desc.GetWorkflowExecutionInfo().GetExecution().GetRunId()
		it := temporalClient.GetWorkflowHistory(ctx, id, exec, false, enums.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
		var h historypb.History
		for it.HasNext() {
			ev, err := it.Next()
			require.NoError(t, err)
			h.Events = append(h.Events, ev)
		}
		// A whole execution of a 10,000-step DAG replays in one go: on a
		// loaded machine its start (the plan decoded, the state restored,
		// a window of steps started) passed the SDK's 1 s guard against
		// workflow code that never yields. The worker's own guard is
		// workflowDeadlock (worker.go).
		r, err := sdkworker.NewWorkflowReplayerWithOptions(sdkworker.WorkflowReplayerOptions{DisableDeadlockDetection: true})
		require.NoError(t, err)
		workflows.Register(r)
		require.NoError(t, r.ReplayWorkflowHistoryWithOptions(nil, &h, sdkworker.ReplayWorkflowHistoryOptions{
			OriginalExecution: workflow.Execution{ID: id, RunID: exec},
		}), "execution %s of %s replays", exec, id)
		runID = h.Events[0].GetWorkflowExecutionStartedEventAttributes().GetContinuedExecutionRunId()
		more = runID != ""
	}
}

// writeExecution writes one execution's history to file.
func writeExecution(t *testing.T, id, runID, file string) {
	it := temporalClient.GetWorkflowHistory(context.Background(), id, runID, false, enums.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	var h historypb.History
	for it.HasNext() {
		ev, err := it.Next()
		require.NoError(t, err)
		h.Events = append(h.Events, ev)
	}
	b, err := temporalproto.CustomJSONMarshalOptions{Indent: "  "}.Marshal(&h)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(file, b, 0o644))
}

// histories follows a workflow's executions back from the latest through
// each continue-as-new, and returns how many there are and the largest
// history of them, in events and bytes.
func histories(t *testing.T, id string) (int, int64, int64) {
	ctx := context.Background()
	var events, size int64
	execs := 0
	for runID, more := "", true; more; execs++ {
		desc, err := temporalClient.DescribeWorkflowExecution(ctx, id, runID)
		require.NoError(t, err)
		info := desc.GetWorkflowExecutionInfo()
		events, size = max(events, info.GetHistoryLength()), max(size, info.GetHistorySizeBytes())
		it := temporalClient.GetWorkflowHistory(ctx, id, info.GetExecution().GetRunId(), false, enums.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
		require.True(t, it.HasNext())
		ev, err := it.Next()
		require.NoError(t, err)
		runID = ev.GetWorkflowExecutionStartedEventAttributes().GetContinuedExecutionRunId()
		more = runID != ""
	}
	return execs, events, size
}

func jsonSize(t *testing.T, v any) int {
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return len(b)
}

func payloadSize(t *testing.T, v any) int {
	p, err := converter.GetDefaultDataConverter().ToPayload(v)
	require.NoError(t, err)
	return len(p.GetData())
}

func scaleSize(t *testing.T, env, def string) (int, int) {
	v := os.Getenv(env)
	if v == "" {
		v = def
	}
	a, b, ok := strings.Cut(v, "x")
	x, err1 := strconv.Atoi(a)
	y, err2 := strconv.Atoi(b)
	if !ok || err1 != nil || err2 != nil || x <= 0 || y <= 0 {
		t.Fatalf("%s=%q: expected <chains>x<length>, such as 100x100", env, v)
	}
	return x, y
}

func envInt(t *testing.T, env string, def int) int {
	v := os.Getenv(env)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		t.Fatalf("%s=%q: expected a number of steps", env, v)
	}
	return n
}

// chainsYAML is a pipeline of chains chains of length trivial steps, each
// step reading its predecessor's output.
func chainsYAML(chains, length int) string {
	var s strings.Builder
	s.WriteString("type: pipeline\nname: chains\njobs:\n")
	for c := range chains {
		for i := range length {
			fmt.Fprintf(&s, "  c%ds%d:\n    command: \"true\"\n", c, i)
			if i > 0 {
				fmt.Fprintf(&s, "    inputs:\n      x: ${{parent.jobs.c%ds%d.outputs.out}}\n", c, i-1)
			}
			s.WriteString("    outputs:\n      out:\n")
		}
	}
	return s.String()
}

// fanoutYAML is a pipeline of one root step and n-1 steps reading its
// output.
func fanoutYAML(n int) string {
	var s strings.Builder
	s.WriteString("type: pipeline\nname: fanout\njobs:\n  root:\n    command: \"true\"\n    outputs:\n      out:\n")
	for i := 1; i < n; i++ {
		fmt.Fprintf(&s, "  f%d:\n    command: \"true\"\n    inputs:\n      x: ${{parent.jobs.root.outputs.out}}\n", i)
	}
	return s.String()
}

// TestABurstOfLargeStepsStartsOverSeveralTasks runs 200 independent steps
// whose inputs are 18 KB each (a long command): all ready at once, 3.6 MB
// of child workflow starts in one workflow task's completion passed the
// server's 4 MB message limit, and the server terminated the run
// (GrpcMessageTooLarge). The DAG starts at most taskBudget of steps in a
// task and the rest in later ones: the run succeeds, and no task of its
// history started more than that.
func TestABurstOfLargeStepsStartsOverSeveralTasks(t *testing.T) {
	h := newHarness(t)
	var s strings.Builder
	s.WriteString("type: pipeline\nname: burst\njobs:\n")
	long := strings.Repeat("x", 18000)
	for i := range 200 {
		fmt.Fprintf(&s, "  s%d:\n    command: \"true %s\"\n", i, long)
	}
	id, _, _ := h.runAtScale(t, s.String(), 200, 0, nil)
	ctx := context.Background()
	it := temporalClient.GetWorkflowHistory(ctx, id, "", false, enums.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	perTask, most, tasks := 0, 0, 0
	for it.HasNext() {
		ev, err := it.Next()
		require.NoError(t, err)
		switch ev.GetEventType() {
		case enums.EVENT_TYPE_WORKFLOW_TASK_COMPLETED:
			most, perTask = max(most, perTask), 0
			tasks++
		case enums.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED:
			perTask++
		}
	}
	t.Logf("at most %d steps started in one of %d workflow tasks", most, tasks)
	require.Less(t, most, 100, "a task starts at most about 1 MB of steps, some 60 of these")
}
