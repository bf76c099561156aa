package worker

import (
	"context"
	"errors"
	"fmt"

	enums "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	sdkworker "go.temporal.io/sdk/worker"

	"github.com/porch-pipelines/porch/quota"
	"github.com/porch-pipelines/porch/workflows"
)

// quotaPools says which pools have a quota (workflows.QuotaPoolsName, a
// local activity of the workflow workers): those whose quota workflow
// runs.
type quotaPools struct {
	client client.Client
}

func (q quotaPools) register(w sdkworker.Worker) {
	w.RegisterActivityWithOptions(q.withQuota, activity.RegisterOptions{Name: workflows.QuotaPoolsName})
}

func (q quotaPools) withQuota(ctx context.Context, pools []quota.Pool) ([]quota.Pool, error) {
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
