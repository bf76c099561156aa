package history

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	enums "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
)

// Client is the part of the Temporal client that Find and Fetch use.
type Client interface {
	DescribeWorkflowExecution(ctx context.Context, workflowID, runID string) (*workflowservice.DescribeWorkflowExecutionResponse, error)
	ListWorkflow(ctx context.Context, request *workflowservice.ListWorkflowExecutionsRequest) (*workflowservice.ListWorkflowExecutionsResponse, error)
	GetWorkflowHistory(ctx context.Context, workflowID, runID string, isLongPoll bool,
		filterType enums.HistoryEventFilterType) client.HistoryEventIterator
}

// Ref is one workflow execution to export.
type Ref struct {
	WorkflowID   string
	RunID        string
	WorkflowType string
	// Start is when the execution started (its first event).
	Start time.Time
}

// listPageSize is how many executions one visibility call returns.
const listPageSize = 1000

// Find lists the executions of the workflow root (every run of it the
// query finds, and its latest), those the visibility query selects ("" for
// none), and every child workflow and continue-as-new run their histories
// name, however deep, ordered by workflow id, then start time. Following
// the histories finds what visibility has not indexed yet. An execution
// whose history is gone (past the namespace's retention) is left out.
func Find(ctx context.Context, c Client, namespace, root, query string) ([]Ref, error) {
	desc, err := c.DescribeWorkflowExecution(ctx, root, "")
	if err != nil {
		return nil, err
	}
	f := finder{seen: map[[2]string]*Ref{}}
	info := desc.GetWorkflowExecutionInfo()
	f.add(root, info.GetExecution().GetRunId(), info.GetType().GetName(), info.GetStartTime().AsTime())
	if query != "" {
		req := &workflowservice.ListWorkflowExecutionsRequest{Namespace: namespace, PageSize: listPageSize, Query: query}
		for {
			resp, err := c.ListWorkflow(ctx, req)
			if err != nil {
				return nil, fmt.Errorf("list the workflows of %s: %w", root, err)
			}
			for _, e := range resp.GetExecutions() {
				f.add(e.GetExecution().GetWorkflowId(), e.GetExecution().GetRunId(), e.GetType().GetName(), e.GetStartTime().AsTime())
			}
			if len(resp.GetNextPageToken()) == 0 {
				break
			}
			req.NextPageToken = resp.GetNextPageToken()
		}
	}
	var found []Ref
	for len(f.queue) > 0 {
		r := f.queue[0]
		f.queue = f.queue[1:]
		err := f.follow(ctx, c, r)
		var nf *serviceerror.NotFound
		if errors.As(err, &nf) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("read the history of %s (run %s): %w", r.WorkflowID, r.RunID, err)
		}
		found = append(found, *r)
	}
	slices.SortFunc(found, func(a, b Ref) int {
		return cmp.Or(cmp.Compare(a.WorkflowID, b.WorkflowID), a.Start.Compare(b.Start), cmp.Compare(a.RunID, b.RunID))
	})
	return found, nil
}

// finder collects executions, each once.
type finder struct {
	seen  map[[2]string]*Ref
	queue []*Ref
}

func (f *finder) add(workflowID, runID, typ string, start time.Time) {
	if workflowID == "" || runID == "" {
		return
	}
	key := [2]string{workflowID, runID}
	if f.seen[key] != nil {
		return
	}
	r := &Ref{WorkflowID: workflowID, RunID: runID, WorkflowType: typ, Start: start}
	f.seen[key] = r
	f.queue = append(f.queue, r)
}

// follow reads r's history, completing r from its first event and adding
// the executions it names: children started, the run it continued and the
// run it continued as.
func (f *finder) follow(ctx context.Context, c Client, r *Ref) error {
	it := c.GetWorkflowHistory(ctx, r.WorkflowID, r.RunID, false, enums.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			return err
		}
		switch ev.GetEventType() {
		case enums.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED:
			a := ev.GetWorkflowExecutionStartedEventAttributes()
			r.WorkflowType, r.Start = a.GetWorkflowType().GetName(), ev.GetEventTime().AsTime()
			f.add(r.WorkflowID, a.GetContinuedExecutionRunId(), "", time.Time{})
		case enums.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_STARTED:
			a := ev.GetChildWorkflowExecutionStartedEventAttributes()
			f.add(a.GetWorkflowExecution().GetWorkflowId(), a.GetWorkflowExecution().GetRunId(), a.GetWorkflowType().GetName(), time.Time{})
		case enums.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW:
			f.add(r.WorkflowID, ev.GetWorkflowExecutionContinuedAsNewEventAttributes().GetNewExecutionRunId(), "", time.Time{})
		}
	}
	return nil
}

// Fetch reads the history of one execution, as far as it goes.
func Fetch(ctx context.Context, c Client, r Ref) (Execution, error) {
	h := &historypb.History{}
	it := c.GetWorkflowHistory(ctx, r.WorkflowID, r.RunID, false, enums.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			return Execution{}, fmt.Errorf("read the history of %s (run %s): %w", r.WorkflowID, r.RunID, err)
		}
		h.Events = append(h.Events, ev)
	}
	return Execution{WorkflowID: r.WorkflowID, RunID: r.RunID, WorkflowType: r.WorkflowType, History: h}, nil
}
