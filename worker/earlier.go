package worker

import (
	"context"
	"errors"
	"fmt"

	enums "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"

	"github.com/porch-pipelines/porch/workflows"
)

// endEarlierChild ends the workflow that holds a child's id when an
// earlier execution of the child's parent started it, as a reset leaves
// it (workflows.EndEarlierChildName): it is terminated, its activities
// stop at their next heartbeat, and the parent's new execution starts the
// child again. It says whether the id is free; a workflow some other
// parent, or this very execution, started is left alone.
func (q serverAsks) endEarlierChild(ctx context.Context, in workflows.EarlierChild) (bool, error) {
	d, err := q.client.DescribeWorkflowExecution(ctx, in.WorkflowID, "")
	var missing *serviceerror.NotFound
	switch {
	case errors.As(err, &missing):
		return true, nil
	case err != nil:
		return false, fmt.Errorf("read workflow %s: %w", in.WorkflowID, err)
	}
	info := d.GetWorkflowExecutionInfo()
	if info.GetStatus() != enums.WORKFLOW_EXECUTION_STATUS_RUNNING {
		return true, nil
	}
	parent := info.GetParentExecution()
	if parent.GetWorkflowId() != in.ParentID || parent.GetRunId() == in.ParentRunID {
		return false, nil
	}
	reason := fmt.Sprintf("porch: %s was reset; its execution %s runs this step again", in.ParentID, in.ParentRunID)
	err = q.client.TerminateWorkflow(ctx, in.WorkflowID, info.GetExecution().GetRunId(), reason)
	if err != nil && !errors.As(err, &missing) {
		return false, fmt.Errorf("end workflow %s, left running by an earlier execution of %s: %w", in.WorkflowID, in.ParentID, err)
	}
	return true, nil
}
