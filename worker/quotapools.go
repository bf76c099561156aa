package worker

import (
	"context"
	"errors"
	"fmt"

	enums "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"

	"github.com/porch-pipelines/porch/quota"
)

// withQuota says which pools have a quota (workflows.QuotaPoolsName):
// those whose quota workflow runs.
func (q serverAsks) withQuota(ctx context.Context, pools []quota.Pool) ([]quota.Pool, error) {
	var out []quota.Pool
	for _, p := range pools {
		desc, err := q.client.DescribeWorkflowExecution(ctx, p.WorkflowID(), "")
		var missing *serviceerror.NotFound
		switch {
		case errors.As(err, &missing):
			continue
		case err != nil:
			return nil, fmt.Errorf("read the quota of %s: %w", p.WorkflowID(), err)
		}
		if desc.GetWorkflowExecutionInfo().GetStatus() == enums.WORKFLOW_EXECUTION_STATUS_RUNNING {
			out = append(out, p)
		}
	}
	return out, nil
}

// endedClaimants returns which of the ids name no running workflow
// (workflows.EndedClaimantsName): a quota takes their claims back.
func (q serverAsks) endedClaimants(ctx context.Context, ids []string) ([]string, error) {
	var ended []string
	for _, id := range ids {
		e, err := workflowEnded(ctx, q.client, id, "")
		if err != nil {
			return nil, err
		}
		if e {
			ended = append(ended, id)
		}
	}
	return ended, nil
}
