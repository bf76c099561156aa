package workflows

import (
	"errors"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
)

// resetChildrenChange is the GetVersion id of a workflow that ends the
// children an earlier execution of it left running before it starts them
// again (version 1). A reset (`temporal workflow reset`) of a running run
// starts a new execution and leaves the old one's children running (the
// server does so since temporalio/temporal#6935), so the new execution's
// step, or a sweep's trial, could not start under its own id ("child
// workflow execution already started") and the old one went on writing
// into a run porch reported failed. It is asked only when a child's id is
// taken, so other histories are replayed as they ran.
const resetChildrenChange = "reset-ends-earlier-children"

// EndEarlierChildName is the local activity (registered by the worker,
// which has a client) that ends the workflow holding a child's id when an
// earlier execution of the parent started it; it returns whether the id
// is free for the parent to start the child again.
const EndEarlierChildName = "EndEarlierChild"

// EarlierChild names a child whose id is taken, and the parent that
// wants to start it: its workflow id and this execution's run id.
type EarlierChild struct {
	WorkflowID  string `json:"workflow_id"`
	ParentID    string `json:"parent_id"`
	ParentRunID string `json:"parent_run_id"`
}

// childIDTaken says whether a child's resolved future failed because a
// workflow with its id runs, from version 1 of resetChildrenChange on.
func childIDTaken(ctx workflow.Context, f workflow.Future) bool {
	var taken *temporal.ChildWorkflowExecutionAlreadyStartedError
	if !errors.As(f.Get(ctx, nil), &taken) || ctx.Err() != nil {
		return false
	}
	return workflow.GetVersion(ctx, resetChildrenChange, workflow.DefaultVersion, 1) == 1
}

// endEarlierChild ends the workflow holding child id id if an earlier
// execution of this workflow started it; the future says (a bool) whether
// the id is free now.
func endEarlierChild(ctx workflow.Context, id string) workflow.Future {
	info := workflow.GetInfo(ctx)
	lctx := workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{
		StartToCloseTimeout: time.Minute,
		RetryPolicy:         &temporal.RetryPolicy{MaximumAttempts: 3},
		Summary:             "end " + id + ", left running by an earlier execution",
	})
	return workflow.ExecuteLocalActivity(lctx, EndEarlierChildName,
		EarlierChild{WorkflowID: id, ParentID: info.WorkflowExecution.ID, ParentRunID: info.WorkflowExecution.RunID})
}

// idFreed reads endEarlierChild's answer.
func idFreed(ctx workflow.Context, f workflow.Future) bool {
	var freed bool
	return f.Get(ctx, &freed) == nil && freed
}
