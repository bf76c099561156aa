package worker_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"

	"github.com/porch-pipelines/porch/workflows"
)

// TestAStepEndedFromOutsidePorchFailsItsRun cancels, then terminates, a
// running step's workflow from a separate Temporal client (as the web UI
// or `temporal workflow cancel|terminate` would): the run fails, never
// completes; the failure and the steps query name the step and who ended
// it; its dependant is skipped.
func TestAStepEndedFromOutsidePorchFailsItsRun(t *testing.T) {
	ops, err := client.Dial(client.Options{HostPort: serverAddress, Identity: "ops@control-room"})
	require.NoError(t, err)
	defer ops.Close()
	for _, c := range []struct {
		name string
		end  func(id string) error
		want string
	}{
		{"cancel", func(id string) error { return ops.CancelWorkflow(context.Background(), id, "") },
			`step "slow" was canceled from outside porch by ops@control-room`},
		{"terminate", func(id string) error {
			return ops.TerminateWorkflow(context.Background(), id, "", "stuck on a bad node")
		}, `step "slow" was terminated from outside porch by ops@control-room: stuck on a bad node`},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t)
			dir := t.TempDir()
			started := filepath.Join(dir, "started")
			path := filepath.Join(dir, "pipeline.yml")
			require.NoError(t, os.WriteFile(path, []byte(fmt.Sprintf(`type: pipeline
jobs:
  slow:
    command: touch %s; sleep 600
  after:
    command: echo after
    inputs:
      x: ${{parent.jobs.slow.outputs.artifacts}}
`, started)), 0o644))
			run := h.start(compile(t, path, nil))
			require.Eventually(t, func() bool { _, err := os.Stat(started); return err == nil },
				time.Minute, 20*time.Millisecond, "the step starts")
			require.NoError(t, c.end(run.GetID()+"/slow"))

			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			err := run.Get(ctx, nil)
			require.Error(t, err, "the run does not complete")
			assert.Contains(t, workflows.ErrorMessage(err), c.want)
			st := steps(t, run.GetID())
			assert.Equal(t, c.want, st["slow"].Error)
			assert.Equal(t, workflows.StatusSkipped, st["after"].Status)
			if os.Getenv("PORCH_RECORD_HISTORIES") != "" {
				// Replay fixtures of a run whose step a client ended
				// (PORCH_RECORD_HISTORIES=1).
				recordRun(t, filepath.Join("..", "workflows", "testdata", "histories"), "v2-step-"+c.name+"-outside", run.GetID())
			}
		})
	}
}

// firstTaskCompleted is the id of a workflow's first WorkflowTaskCompleted
// event: the reset point `temporal workflow reset --type FirstWorkflowTask`
// picks.
func firstTaskCompleted(t *testing.T, id string) int64 {
	t.Helper()
	it := temporalClient.GetWorkflowHistory(context.Background(), id, "", false, enums.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		e, err := it.Next()
		require.NoError(t, err)
		if e.GetEventType() == enums.EVENT_TYPE_WORKFLOW_TASK_COMPLETED {
			return e.GetEventId()
		}
	}
	t.Fatalf("%s has no completed workflow task", id)
	return 0
}

// TestAResetRunOrStepFinishes resets, as `temporal workflow reset` does, a
// finished run to its first workflow task, and a running step's workflow
// to its first: the run runs its steps again and succeeds; the step runs
// its command again and its run succeeds, the reset not read as a step
// ended from outside.
func TestAResetRunOrStepFinishes(t *testing.T) {
	h := newHarness(t)
	dir := t.TempDir()
	log, gate, pids := filepath.Join(dir, "ran.log"), filepath.Join(dir, "gate"), filepath.Join(dir, "pids")
	path := filepath.Join(dir, "pipeline.yml")
	require.NoError(t, os.WriteFile(path, []byte(fmt.Sprintf(`type: pipeline
jobs:
  first:
    command: echo first >> %[1]s
  second:
    command: echo $$ >> %[3]s; echo second >> %[1]s; while [ ! -e %[2]s ]; do sleep 0.1; done
    inputs:
      x: ${{parent.jobs.first.outputs.artifacts}}
`, log, gate, pids)), 0o644))
	run := h.start(compile(t, path, nil))
	linesAre := func(n int) func() bool {
		return func() bool { b, _ := os.ReadFile(log); return strings.Count(string(b), "\n") == n }
	}
	require.Eventually(t, linesAre(2), time.Minute, 20*time.Millisecond, "both steps start")

	// The running step, reset: its command runs again.
	step := run.GetID() + "/second"
	_, err := temporalClient.ResetWorkflowExecution(context.Background(), &workflowservice.ResetWorkflowExecutionRequest{
		Namespace: "default", WorkflowExecution: &commonpb.WorkflowExecution{WorkflowId: step},
		Reason: "test", WorkflowTaskFinishEventId: firstTaskCompleted(t, step), RequestId: "reset-step",
	})
	require.NoError(t, err)
	require.Eventually(t, linesAre(3), time.Minute, 20*time.Millisecond, "the reset step runs its command again")
	b, err := os.ReadFile(pids)
	require.NoError(t, err)
	abandoned, err := strconv.Atoi(strings.Fields(string(b))[0])
	require.NoError(t, err)
	assertPIDGoneWithin(t, abandoned, 10*time.Second)
	require.NoError(t, os.WriteFile(gate, nil, 0o644))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	require.NoError(t, run.Get(ctx, nil), "the run of a reset step succeeds")

	// The finished run, reset: it runs both steps again and succeeds.
	resp, err := temporalClient.ResetWorkflowExecution(context.Background(), &workflowservice.ResetWorkflowExecutionRequest{
		Namespace: "default", WorkflowExecution: &commonpb.WorkflowExecution{WorkflowId: run.GetID()},
		Reason: "test", WorkflowTaskFinishEventId: firstTaskCompleted(t, run.GetID()), RequestId: "reset-run",
	})
	require.NoError(t, err)
	require.NoError(t, temporalClient.GetWorkflow(ctx, run.GetID(), resp.GetRunId()).Get(ctx, nil), "the reset run succeeds")
	b, err = os.ReadFile(log)
	require.NoError(t, err)
	assert.Equal(t, "first\nsecond\nsecond\nfirst\nsecond\n", string(b))
	for path, s := range steps(t, run.GetID()) {
		assert.Equal(t, workflows.StatusSucceeded, s.Status, path)
	}
}
