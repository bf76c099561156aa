package worker_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	enums "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"

	"github.com/stretchr/testify/require"

	"github.com/porch-pipelines/porch/compiler/plan"
	"github.com/porch-pipelines/porch/worker"
	"github.com/porch-pipelines/porch/workflows"
)

// Fast plan life settings for these tests: a store checks its holders
// every planCheck and ends planGrace after the last is gone.
const (
	planCheck = 300 * time.Millisecond
	planGrace = 2 * time.Second
)

// newPlanLifeHarness is a harness whose worker runs stored plans' lives
// fast, and a function that replaces that worker with a new one (whose
// cache of plans is empty).
func newPlanLifeHarness(t *testing.T) (*harness, func()) {
	t.Helper()
	h := &harness{t: t, home: t.TempDir()}
	start := func() *worker.Worker {
		w, err := worker.Start(temporalClient, worker.Options{Home: h.home, Computes: []string{""}, Workflows: true,
			PlanCheckEvery: planCheck, PlanGrace: planGrace})
		require.NoError(t, err)
		return w
	}
	w := start()
	t.Cleanup(func() { w.Stop() })
	return h, func() { w.Stop(); w = start() }
}

// planStatus is the status of the latest PlanStore workflow of chunk 0 of
// the plan ref names, and its run id; "" for none.
func planStatus(t *testing.T, ref workflows.PlanRef) (enums.WorkflowExecutionStatus, string) {
	t.Helper()
	d, err := temporalClient.DescribeWorkflowExecution(context.Background(), workflows.PlanChunkID(ref.Hash, 0), "")
	var missing *serviceerror.NotFound
	if errors.As(err, &missing) {
		return enums.WORKFLOW_EXECUTION_STATUS_UNSPECIFIED, ""
	}
	require.NoError(t, err)
	return d.GetWorkflowExecutionInfo().GetStatus(), d.GetWorkflowExecutionInfo().GetExecution().GetRunId()
}

// stillRunning checks that the plan's store runs for three times the grace.
func stillRunning(t *testing.T, ref workflows.PlanRef, why string) {
	t.Helper()
	time.Sleep(3 * planGrace)
	st, _ := planStatus(t, ref)
	require.Equal(t, enums.WORKFLOW_EXECUTION_STATUS_RUNNING, st, why)
}

// endsSoon waits for the plan's store to complete.
func endsSoon(t *testing.T, ref workflows.PlanRef, why string) {
	t.Helper()
	require.Eventually(t, func() bool {
		st, _ := planStatus(t, ref)
		return st == enums.WORKFLOW_EXECUTION_STATUS_COMPLETED
	}, 30*time.Second, 100*time.Millisecond, why)
}

// deleteWorkflow deletes a closed workflow, as namespace retention does.
func deleteWorkflow(t *testing.T, id string) {
	t.Helper()
	ctx := context.Background()
	_, err := temporalClient.WorkflowService().DeleteWorkflowExecution(ctx, &workflowservice.DeleteWorkflowExecutionRequest{
		Namespace: "default", WorkflowExecution: &commonpb.WorkflowExecution{WorkflowId: id},
	})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		_, err := temporalClient.DescribeWorkflowExecution(ctx, id, "")
		var missing *serviceerror.NotFound
		return errors.As(err, &missing)
	}, 30*time.Second, 100*time.Millisecond, "workflow %s is deleted", id)
}

// planLifePlan is a one-step pipeline whose plan no other test stores.
func planLifePlan(t *testing.T, name string) *plan.Plan {
	return compile(t, writePipeline(t, "type: pipeline\nname: "+name+"\njobs:\n  hello:\n    command: echo hello\n"), nil)
}

// refOf is the reference a run of p names its plan by.
func refOf(t *testing.T, p *plan.Plan) workflows.PlanRef {
	r := workflows.NewStartRequest(p, "x", nil)
	require.NotNil(t, r.Input.Plan)
	return *r.Input.Plan
}

// TestAStoredPlanEndsOnceNothingHoldsItAndIsStoredAgain runs a pipeline:
// its plan stays while the run is on the server, closed or not, and ends a
// grace after retention deletes the run (here a delete); the pipeline
// then runs again, its plan stored again; and a run that does not store
// it reads it from the ended store and stores it again. The store's
// summary names the pipeline, its current details what holds it. With
// PORCH_RECORD_HISTORIES set it records the store's history as a replay
// fixture.
func TestAStoredPlanEndsOnceNothingHoldsItAndIsStoredAgain(t *testing.T) {
	h, restart := newPlanLifeHarness(t)
	ctx := context.Background()
	p := planLifePlan(t, "plan-life-run")
	ref := refOf(t, p)
	first, err := h.run(p)
	require.NoError(t, err)
	id, err := h.run(p)
	require.NoError(t, err)

	d, err := temporalClient.DescribeWorkflowExecution(ctx, workflows.PlanChunkID(ref.Hash, 0), "")
	require.NoError(t, err)
	var summary string
	require.NoError(t, converter.GetDefaultDataConverter().FromPayload(d.GetExecutionConfig().GetUserMetadata().GetSummary(), &summary))
	require.Contains(t, summary, "plan of pipeline "+p.Name+": 1 step")
	stillRunning(t, ref, "a run that ended holds its plan while the server has it: it may be resumed")
	details := currentDetails(t, workflows.PlanChunkID(ref.Hash, 0))
	require.Contains(t, details, "plan of pipeline "+p.Name, "the store's details name its plan, as its summary does")
	require.Contains(t, details, "held by run "+id, "the store says what holds it")
	require.NotContains(t, details, first, "of the closed runs, the one that closed last holds the plan: retention deletes it last")

	deleteWorkflow(t, first)
	deleteWorkflow(t, id)
	endsSoon(t, ref, "the plan ends a grace after its last holder is gone")
	if os.Getenv("PORCH_RECORD_HISTORIES") != "" {
		writeHistory(t, workflows.PlanChunkID(ref.Hash, 0), filepath.Join("..", "workflows", "testdata", "histories", "v3-plan-life.json"))
	}
	_, ended := planStatus(t, ref)

	again, err := h.run(p)
	require.NoError(t, err, "a pipeline whose plan ended runs again")
	st, rerun := planStatus(t, ref)
	require.Equal(t, enums.WORKFLOW_EXECUTION_STATUS_RUNNING, st, "the plan is stored again")
	require.NotEqual(t, ended, rerun)
	deleteWorkflow(t, again)
	endsSoon(t, ref, "the plan stored again ends too")

	// A run that does not store its plan (reset, or started from
	// Temporal with porch's input) finds it ended, and holds it again, on
	// a worker that has not read it yet.
	restart()
	r := workflows.NewStartRequest(p, workflows.NewRunID(p), nil)
	run, err := temporalClient.ExecuteWorkflow(ctx, r.Options, workflows.PipelineName, r.Input)
	require.NoError(t, err)
	require.NoError(t, run.Get(ctx, nil), "a run reads a plan whose store ended")
	st, _ = planStatus(t, ref)
	require.Equal(t, enums.WORKFLOW_EXECUTION_STATUS_RUNNING, st, "the run that read the plan stored it again")
	require.Eventually(t, func() bool {
		return strings.Contains(currentDetails(t, workflows.PlanChunkID(ref.Hash, 0)), "held by run "+run.GetID())
	}, 10*time.Second, 100*time.Millisecond, "the run that read the plan holds it")
}

// TestAScheduleKeepsItsPlanUntilDeleted stores a plan for a schedule that
// starts one run: the plan stays while the schedule names it, then while
// that run is on the server, and ends a grace after. The plan the
// schedule is updated to stays until the schedule is deleted.
func TestAScheduleKeepsItsPlanUntilDeleted(t *testing.T) {
	newPlanLifeHarness(t)
	ctx := context.Background()
	p := planLifePlan(t, "plan-life-schedule")
	r := workflows.NewStartRequest(p, "", nil)
	ref := *r.Input.Plan
	const name = "plan-life-nightly"
	require.NoError(t, r.StorePlan(ctx, temporalClient, workflows.PlanHolder{Schedule: name}))
	// porch stores a schedule's plan before it creates the schedule: the
	// store may check its holders in between.
	require.Eventually(t, func() bool {
		return strings.Contains(currentDetails(t, workflows.PlanChunkID(ref.Hash, 0)), "checked at")
	}, 10*time.Second, 50*time.Millisecond)
	sh, err := temporalClient.ScheduleClient().Create(ctx, client.ScheduleOptions{
		ID:   name,
		Spec: client.ScheduleSpec{CronExpressions: []string{"0 0 1 1 *"}},
		Action: &client.ScheduleWorkflowAction{ID: name, Workflow: workflows.PipelineName, Args: []any{r.Input},
			TaskQueue: r.Options.TaskQueue, TypedSearchAttributes: r.Options.TypedSearchAttributes, Memo: r.Options.Memo},
		TriggerImmediately: true,
	})
	require.NoError(t, err)
	var id string
	require.Eventually(t, func() bool {
		desc, err := sh.Describe(ctx)
		if err == nil && len(desc.Info.RecentActions) > 0 {
			id = desc.Info.RecentActions[0].StartWorkflowResult.WorkflowID
		}
		return id != ""
	}, time.Minute, 50*time.Millisecond)
	require.NoError(t, temporalClient.GetWorkflow(ctx, id, "").Get(ctx, nil))
	stillRunning(t, ref, "a schedule holds its plan")

	// The schedule is updated to another plan, stored first as porch
	// schedule update does: its run from before holds the first plan.
	edited := workflows.NewStartRequest(planLifePlan(t, "plan-life-schedule-edited"), "", nil)
	require.NoError(t, edited.StorePlan(ctx, temporalClient, workflows.PlanHolder{Schedule: name}))
	require.NoError(t, sh.Update(ctx, client.ScheduleUpdateOptions{DoUpdate: func(in client.ScheduleUpdateInput) (*client.ScheduleUpdate, error) {
		in.Description.Schedule.Action.(*client.ScheduleWorkflowAction).Args = []any{edited.Input}
		return &client.ScheduleUpdate{Schedule: &in.Description.Schedule}, nil
	}}))
	stillRunning(t, ref, "the runs a schedule started before it was updated hold its earlier plan")
	require.Contains(t, currentDetails(t, workflows.PlanChunkID(ref.Hash, 0)), "held by schedule "+name+"'s runs")
	require.Contains(t, currentDetails(t, workflows.PlanChunkID(edited.Input.Plan.Hash, 0)), "held by schedule "+name+"\n")

	require.NoError(t, sh.Delete(ctx))
	stillRunning(t, ref, "a deleted schedule's run holds its plan while the server has it")
	deleteWorkflow(t, id)
	endsSoon(t, ref, "the plan ends a grace after the schedule and its runs are gone")
	endsSoon(t, *edited.Input.Plan, "the edited plan ends a grace after the schedule is gone")
}

// TestARunWhosePlanIsGoneFailsClearly starts a run whose plan the server
// does not hold (retention deleted it): the run fails saying so and what
// to do, and porch job resume refuses it the same way.
func TestARunWhosePlanIsGoneFailsClearly(t *testing.T) {
	newPlanLifeHarness(t)
	ctx := context.Background()
	p := planLifePlan(t, "plan-life-gone")
	r := workflows.NewStartRequest(p, workflows.NewRunID(p), nil)
	run, err := temporalClient.ExecuteWorkflow(ctx, r.Options, workflows.PipelineName, r.Input)
	require.NoError(t, err)
	err = run.Get(ctx, nil)
	require.Error(t, err)
	require.ErrorContains(t, err, "the server no longer holds plan")
	require.ErrorContains(t, err, "submit the pipeline again")

	_, _, err = workflows.Resume(ctx, temporalClient, run.GetID())
	require.ErrorContains(t, err, "the server no longer holds plan")
}
