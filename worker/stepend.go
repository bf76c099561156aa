package worker

import (
	"context"
	"fmt"

	commonpb "go.temporal.io/api/common/v1"
	enums "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/activity"

	"github.com/porch-pipelines/porch/workflows"
)

// stepEnd reads, for workflows.DescribeStepEndName, the step workflow's
// history from its end back to the request that ended it: a termination
// (its identity and reason) or a cancellation request (its identity).
func (s serverAsks) stepEnd(ctx context.Context, workflowID string) (workflows.StepEnd, error) {
	ns := activity.GetInfo(ctx).Namespace
	var token []byte
	for {
		resp, err := s.client.WorkflowService().GetWorkflowExecutionHistoryReverse(ctx, &workflowservice.GetWorkflowExecutionHistoryReverseRequest{
			Namespace: ns, Execution: &commonpb.WorkflowExecution{WorkflowId: workflowID}, NextPageToken: token, MaximumPageSize: 100,
		})
		if err != nil {
			return workflows.StepEnd{}, fmt.Errorf("read the history of %s: %w", workflowID, err)
		}
		for _, e := range resp.GetHistory().GetEvents() {
			switch e.GetEventType() {
			case enums.EVENT_TYPE_WORKFLOW_EXECUTION_TERMINATED:
				a := e.GetWorkflowExecutionTerminatedEventAttributes()
				return workflows.StepEnd{Kind: "terminated", Identity: a.GetIdentity(), Reason: a.GetReason()}, nil
			case enums.EVENT_TYPE_WORKFLOW_EXECUTION_CANCEL_REQUESTED:
				a := e.GetWorkflowExecutionCancelRequestedEventAttributes()
				return workflows.StepEnd{Kind: "canceled", Identity: a.GetIdentity(), Reason: a.GetCause()}, nil
			}
		}
		if token = resp.GetNextPageToken(); len(token) == 0 {
			return workflows.StepEnd{}, nil
		}
	}
}
