package worker

import (
	"context"
	"fmt"

	commonpb "go.temporal.io/api/common/v1"
	enums "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	sdkworker "go.temporal.io/sdk/worker"

	"github.com/porch-pipelines/porch/workflows"
)

// stepEnds reads who cancelled or terminated a step workflow from outside
// porch (workflows.DescribeStepEndName, a local activity of the workflow
// workers).
type stepEnds struct {
	client client.Client
}

func (s stepEnds) register(w sdkworker.Worker) {
	w.RegisterActivityWithOptions(s.describe, activity.RegisterOptions{Name: workflows.DescribeStepEndName})
}

// describe reads the step workflow's history from its end back to the
// request that ended it: a termination (its identity and reason) or a
// cancellation request (its identity).
func (s stepEnds) describe(ctx context.Context, workflowID string) (workflows.StepEnd, error) {
	ns := activity.GetInfo(ctx).WorkflowNamespace
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
