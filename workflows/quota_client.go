package workflows

import (
	"context"
	"errors"
	"fmt"

	enums "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"

	"github.com/porch-pipelines/porch/compiler/plan"
	"github.com/porch-pipelines/porch/quota"
)

// SetQuota sets a pool's quota in cores, starting the pool's quota
// workflow when it has none, and returns the previous limit (0 for none).
// Waiting steps that now fit are granted at once.
func SetQuota(ctx context.Context, c client.Client, p quota.Pool, cores int) (int, error) {
	start := c.NewWithStartWorkflowOperation(client.StartWorkflowOptions{
		ID:                       p.WorkflowID(),
		TaskQueue:                plan.DefaultTaskQueue,
		WorkflowIDConflictPolicy: enums.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
	}, QuotaName, QuotaInput{State: quota.State{Pool: p}})
	h, err := c.UpdateWithStartWorkflow(ctx, client.UpdateWithStartWorkflowOptions{
		StartWorkflowOperation: start,
		UpdateOptions: client.UpdateWorkflowOptions{
			UpdateName:   quota.SetUpdate,
			Args:         []any{cores},
			WaitForStage: client.WorkflowUpdateStageCompleted,
		},
	})
	prev := 0
	if err == nil {
		err = h.Get(ctx, &prev)
	}
	return prev, plainError(err)
}

// DeleteQuota lifts a pool's quota: the steps waiting for it run, and the
// pool's workflow ends.
func DeleteQuota(ctx context.Context, c client.Client, p quota.Pool) error {
	h, err := c.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{
		WorkflowID:   p.WorkflowID(),
		UpdateName:   quota.DeleteUpdate,
		WaitForStage: client.WorkflowUpdateStageCompleted,
	})
	var nf *serviceerror.NotFound
	if errors.As(err, &nf) {
		return fmt.Errorf("%s has no quota: porch quota list shows the quotas set", p)
	}
	if err == nil {
		err = h.Get(ctx, nil)
	}
	return plainError(err)
}

// GetQuota returns a pool's quota, and false when none is set.
func GetQuota(ctx context.Context, c client.Client, p quota.Pool) (quota.State, bool, error) {
	var s quota.State
	d, err := c.DescribeWorkflowExecution(ctx, p.WorkflowID(), "")
	var nf *serviceerror.NotFound
	if errors.As(err, &nf) {
		return s, false, nil
	}
	if err != nil {
		return s, false, err
	}
	if d.GetWorkflowExecutionInfo().GetStatus() != enums.WORKFLOW_EXECUTION_STATUS_RUNNING {
		return s, false, nil // lifted: a closed quota still answers queries
	}
	v, err := c.QueryWorkflow(ctx, p.WorkflowID(), "", quota.StatusQuery)
	if err != nil {
		return s, false, err
	}
	if err := v.Get(&s); err != nil {
		return s, false, err
	}
	return s, true, nil
}

// ListQuotas returns every quota set in the namespace, in the order the
// server lists them.
func ListQuotas(ctx context.Context, c client.Client) ([]quota.State, error) {
	var out []quota.State
	var token []byte
	for {
		resp, err := c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{
			Query:         fmt.Sprintf("WorkflowType = '%s' AND ExecutionStatus = 'Running'", QuotaName),
			NextPageToken: token,
		})
		if err != nil {
			return nil, err
		}
		for _, e := range resp.GetExecutions() {
			v, err := c.QueryWorkflow(ctx, e.GetExecution().GetWorkflowId(), "", quota.StatusQuery)
			if err != nil {
				continue // it ended between the list and the query
			}
			var s quota.State
			if v.Get(&s) == nil {
				out = append(out, s)
			}
		}
		if token = resp.GetNextPageToken(); len(token) == 0 {
			return out, nil
		}
	}
}

// QuotaWait is what a step that claims cores waits for: the pool's status
// line as porch run and porch job show print it, "" when it waits for
// nothing; admitted once it holds its cores (it will not wait again).
func QuotaWait(ctx context.Context, c client.Client, stepWorkflowID string) (wait string, admitted bool, err error) {
	v, err := c.QueryWorkflow(ctx, stepWorkflowID, "", QuotaWaitQuery)
	if err != nil {
		return "", false, err
	}
	var a QuotaAdmission
	if err := v.Get(&a); err != nil || a.Waiting == nil {
		return "", a.Admitted, err
	}
	s, ok, err := GetQuota(ctx, c, *a.Waiting)
	if err != nil || !ok {
		return "", false, err
	}
	return s.Waiting(stepWorkflowID), false, nil
}

// CheckQuotas refuses a plan with a step that asks more cores than a quota
// set on its compute or VM size could ever give, with Azure's advice. It
// runs when a pipeline is submitted, before anything starts.
func CheckQuotas(ctx context.Context, c client.Client, p *plan.Plan) error {
	limits := map[quota.Pool]int{}
	var check func(steps []plan.Step) error
	check = func(steps []plan.Step) error {
		for _, s := range steps {
			var r plan.Resources
			switch {
			case s.Command != nil:
				r = s.Command.Resources
			case s.Parallel != nil:
				r = s.Parallel.Resources
			case s.Pipeline != nil:
				if err := check(s.Pipeline.Steps); err != nil {
					return err
				}
				continue
			default:
				continue
			}
			req := quotaRequest(s.Compute, r)
			if req == nil {
				continue
			}
			for _, pool := range req.Pools {
				limit, seen := limits[pool]
				if !seen {
					q, ok, err := GetQuota(ctx, c, pool)
					if err != nil {
						return fmt.Errorf("read the quota of %s: %w", pool, err)
					}
					if ok {
						limit = q.Cores
					}
					limits[pool] = limit
				}
				if err := quota.Check(pool, limit, r.Instances(), r.Cores); err != nil {
					return fmt.Errorf("%s:%d:%d: step %q: %w", s.Pos.File, s.Pos.Line, s.Pos.Col, s.Path, err)
				}
			}
		}
		return nil
	}
	return check(p.Pipeline.Steps)
}
