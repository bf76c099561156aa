package worker_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/api/enums/v1"
	sdkpb "go.temporal.io/api/sdk/v1"
	"go.temporal.io/api/workflowservice/v1"

	"github.com/porch-pipelines/porch/quota"
	"github.com/porch-pipelines/porch/workflows"
)

// assertCleanHistory checks a closed workflow's history reads as what
// happened: no failed command (a failed signal), and nothing left pending
// at its close, neither an activity (describe lists none) nor a timer.
func assertCleanHistory(t *testing.T, workflowID string) {
	t.Helper()
	ctx := context.Background()
	desc, err := temporalClient.DescribeWorkflowExecution(ctx, workflowID, "")
	require.NoError(t, err)
	require.NotEqual(t, enums.WORKFLOW_EXECUTION_STATUS_RUNNING, desc.GetWorkflowExecutionInfo().GetStatus(), "%s has closed", workflowID)
	for _, pa := range desc.GetPendingActivities() {
		t.Errorf("%s closed with activity %s pending", workflowID, pa.GetActivityType().GetName())
	}
	timers := map[int64]bool{}
	it := temporalClient.GetWorkflowHistory(ctx, workflowID, "", false, enums.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		e, err := it.Next()
		require.NoError(t, err)
		switch e.GetEventType() {
		case enums.EVENT_TYPE_SIGNAL_EXTERNAL_WORKFLOW_EXECUTION_FAILED:
			t.Errorf("%s: event %d: a signal failed (%s)", workflowID, e.GetEventId(),
				e.GetSignalExternalWorkflowExecutionFailedEventAttributes().GetWorkflowExecution().GetWorkflowId())
		case enums.EVENT_TYPE_TIMER_STARTED:
			timers[e.GetEventId()] = true
		case enums.EVENT_TYPE_TIMER_FIRED:
			delete(timers, e.GetTimerFiredEventAttributes().GetStartedEventId())
		case enums.EVENT_TYPE_TIMER_CANCELED:
			delete(timers, e.GetTimerCanceledEventAttributes().GetStartedEventId())
		}
	}
	for id := range timers {
		t.Errorf("%s closed with the timer started at event %d pending", workflowID, id)
	}
}

// TestClosedStepsLeaveCleanHistories runs a step on a compute with a
// quota and one without, a parallel step with a resource monitor and a
// sweep with early termination (a metrics-poll timer and a timeout), and
// checks their closed histories are clean: no failed signal where a pool
// has no quota, nothing pending.
func TestClosedStepsLeaveCleanHistories(t *testing.T) {
	t.Run("quota", func(t *testing.T) {
		const compute = "quota-clean"
		h := newHarness(t, compute, "noquota-clean")
		startQuota(t, quota.Pool{Kind: quota.Compute, Name: compute}, 4)
		dir := t.TempDir()
		gate := filepath.Join(dir, "gate")
		require.NoError(t, os.WriteFile(gate, nil, 0o644))
		for _, c := range []string{compute, "noquota-clean"} {
			run := h.start(gatedPlan(t, c, 1, 2, gate))
			step := stepWorkflowID(t, run)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			require.NoError(t, run.Get(ctx, nil))
			assertCleanHistory(t, step)
			record(t, "v2-quota-pools-"+c, run.GetID())
		}
	})
	t.Run("parallel", func(t *testing.T) {
		h := newHarness(t)
		path, _ := parallelCase{files: names("tick", 6), settings: `    mini_batch_size: "1"
    max_concurrency_per_instance: 2`, args: "--resource_monitor_interval 1"}.write(t)
		runID, err := h.run(compile(t, path, nil))
		require.NoError(t, err)
		assertCleanHistory(t, runID+"/score")
		assertCleanHistory(t, runID)
		record(t, "v2-parallel-monitors", runID)
	})
	t.Run("sweep", func(t *testing.T) {
		h := newHarness(t)
		path, _ := sweepCase{qualities: "[good, mid]", steps: 3, sleep: 0.05, sweep: `    sampling_algorithm: grid
    limits:
      max_total_trials: 2
      max_concurrent_trials: 2
      timeout: 600
    early_termination:
      type: bandit
      slack_factor: 0.1
      evaluation_interval: 1
      delay_evaluation: 1`}.write(t)
		runID, err := h.run(compile(t, path, nil))
		require.NoError(t, err)
		assertCleanHistory(t, runID+"/tune")
		record(t, "v2-sweep-timers", runID)
	})
}

// record writes a run's histories as replay fixtures named prefix-* when
// PORCH_RECORD_HISTORIES is set.
func record(t *testing.T, prefix, runID string) {
	if os.Getenv("PORCH_RECORD_HISTORIES") != "" {
		recordRun(t, filepath.Join("..", "workflows", "testdata", "histories"), prefix, runID)
	}
}

// TestQueriesAreDescribed reads a run's workflow metadata (what `temporal
// workflow metadata` and the UI's Queries tab show): the steps query says
// what it answers.
func TestQueriesAreDescribed(t *testing.T) {
	h := newHarness(t)
	runID, err := h.run(compile(t, filepath.Join("..", "samples", "hello", "pipeline.yml"), nil))
	require.NoError(t, err)
	v, err := temporalClient.QueryWorkflow(context.Background(), runID, "", "__temporal_workflow_metadata")
	require.NoError(t, err)
	var md sdkpb.WorkflowMetadata
	require.NoError(t, v.Get(&md))
	found := false
	for _, q := range md.GetDefinition().GetQueryDefinitions() {
		if q.GetName() == workflows.StepsQuery {
			found = true
			assert.Contains(t, q.GetDescription(), "Every step of the run")
		}
	}
	assert.True(t, found, "the steps query is listed: %v", md.GetDefinition().GetQueryDefinitions())
}

// TestPorchStatusSaysHowEachWorkflowEnded runs a sweep whose bandit policy
// stops one trial, then a run whose step fails, and finds each workflow by
// its PorchStatus, as `temporal workflow list --query` would: the stopped
// trial is early_terminated (Temporal says Canceled), the rest succeeded;
// the failed step and its run are failed.
func TestPorchStatusSaysHowEachWorkflowEnded(t *testing.T) {
	h := newHarness(t)
	path, _ := banditSweep.write(t)
	runID, err := h.run(compile(t, path, nil))
	require.NoError(t, err)
	bad := ""
	for _, tr := range sweepTrials(t, runID).Trials {
		if tr.Params[0].Text == "bad" {
			bad = tr.WorkflowID
		}
	}
	require.NotEmpty(t, bad)
	byStatus := func(runID, status string) []string {
		resp, err := temporalClient.ListWorkflow(context.Background(), &workflowservice.ListWorkflowExecutionsRequest{
			Query: fmt.Sprintf("%s = '%s' AND %s = '%s'", workflows.AttrRun, runID, workflows.AttrStatus, status),
		})
		require.NoError(t, err)
		var ids []string
		for _, e := range resp.GetExecutions() {
			ids = append(ids, e.GetExecution().GetWorkflowId())
		}
		slices.Sort(ids)
		return ids
	}
	require.Eventually(t, func() bool { return len(byStatus(runID, workflows.PorchEarlyTerminated)) == 1 },
		30*time.Second, 100*time.Millisecond, "the stopped trial is found by its status")
	assert.Equal(t, []string{bad}, byStatus(runID, workflows.PorchEarlyTerminated))
	succeeded := byStatus(runID, workflows.PorchSucceeded)
	assert.Contains(t, succeeded, runID)
	assert.Contains(t, succeeded, runID+"/tune")
	assert.NotContains(t, succeeded, bad)
	record(t, "v3-porch-status", runID)

	failing := writePipeline(t, "type: pipeline\njobs:\n  broken:\n    command: exit 3\n")
	failedRun, err := h.run(compile(t, failing, nil))
	require.Error(t, err)
	require.Eventually(t, func() bool { return len(byStatus(failedRun, workflows.PorchFailed)) == 2 },
		30*time.Second, 100*time.Millisecond, "the failed step and its run")
	assert.Equal(t, []string{failedRun, failedRun + "/broken"}, byStatus(failedRun, workflows.PorchFailed))
}

// TestAFailedStepsHeadlineNamesTheStepAndTheCause reads the close event of
// a failed step's workflow, the headline Temporal's UI shows: the step, the
// exit code and the last lines of stderr, not "activity error".
func TestAFailedStepsHeadlineNamesTheStepAndTheCause(t *testing.T) {
	h := newHarness(t)
	failing := writePipeline(t, "type: pipeline\njobs:\n  broken:\n    command: echo 'cannot open data.csv' >&2; exit 3\n")
	runID, err := h.run(compile(t, failing, nil))
	require.Error(t, err)
	it := temporalClient.GetWorkflowHistory(context.Background(), runID+"/broken", "", false, enums.HISTORY_EVENT_FILTER_TYPE_CLOSE_EVENT)
	require.True(t, it.HasNext())
	e, err := it.Next()
	require.NoError(t, err)
	f := e.GetWorkflowExecutionFailedEventAttributes().GetFailure()
	assert.Equal(t, "step \"broken\" failed: command exited with code 3\ncannot open data.csv", f.GetMessage())
	record(t, "v2-step-headline", runID)
}
