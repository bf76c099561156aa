package worker

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	enums "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	sdkworker "go.temporal.io/sdk/worker"

	"github.com/porch-pipelines/porch/workflows"
)

// maxCachedPlans bounds the plans a worker process keeps: a run reads its
// plan as it starts and at each continue-as-new, its nested pipelines
// theirs; a few plans cover the runs a worker serves at once.
const maxCachedPlans = 16

// planChunks is the local activity through which a workflow reads its
// stored plan: each chunk is read once from the server (the input of its
// PlanStore workflow, which the reader then holds if it had ended), then
// from this process's cache, by hash. It also
// says which of a stored plan's holders still hold it.
type planChunks struct {
	client client.Client
	// every and grace are the plan life's settings (Options).
	every, grace time.Duration
	mu           sync.Mutex
	// chunks are the cached plans' chunks by hash, order the hashes in
	// the order they were cached, oldest first.
	chunks map[string][][]byte
	order  []string
}

func newPlanChunks(c client.Client, every, grace time.Duration) *planChunks {
	if every <= 0 {
		every = workflows.DefaultPlanCheckEvery
	}
	if grace <= 0 {
		grace = workflows.DefaultPlanGrace
	}
	return &planChunks{client: c, every: every, grace: grace, chunks: map[string][][]byte{}}
}

func (p *planChunks) register(w sdkworker.ActivityRegistry) {
	w.RegisterActivityWithOptions(p.load, activity.RegisterOptions{Name: workflows.LoadPlanChunkName})
	w.RegisterActivityWithOptions(p.checkHolders, activity.RegisterOptions{Name: workflows.CheckPlanHoldersName})
}

// load returns chunk i of the plan ref names.
func (p *planChunks) load(ctx context.Context, ref workflows.PlanRef, i int) (workflows.PlanChunk, error) {
	if i < 0 || i >= ref.Chunks {
		return workflows.PlanChunk{}, fmt.Errorf("plan %s has %d chunks, not %d", ref.Hash, ref.Chunks, i+1)
	}
	p.mu.Lock()
	cached := p.chunks[ref.Hash]
	p.mu.Unlock()
	if cached == nil {
		var err error
		// The workflow reading the plan holds it: a store that ended
		// starts again.
		holder := workflows.PlanHolder{Run: activity.GetInfo(ctx).WorkflowExecution.ID}
		if cached, err = workflows.ReadPlan(ctx, p.client, ref, holder, false); err != nil {
			return workflows.PlanChunk{}, err
		}
		p.keep(ref.Hash, cached)
	}
	return workflows.PlanChunk{Hash: ref.Hash, Index: i, Data: cached[i]}, nil
}

// keep caches a plan's chunks, dropping the oldest plan past
// maxCachedPlans.
func (p *planChunks) keep(hash string, chunks [][]byte) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, ok := p.chunks[hash]; ok {
		return
	}
	p.chunks[hash] = chunks
	p.order = append(p.order, hash)
	if len(p.order) > maxCachedPlans {
		delete(p.chunks, p.order[0])
		p.order = p.order[1:]
	}
}

// checkHolders returns the holders of a stored plan that still hold it,
// and the worker's plan life settings. A holder registered less than the
// grace ago holds it even when the server does not have it yet. Of the
// closed runs it keeps the one that closed last: retention deletes it
// last, and a run that starts again (porch job resume) registers anew.
func (p *planChunks) checkHolders(ctx context.Context, in workflows.PlanHoldersCheck) (workflows.PlanHolders, error) {
	out := workflows.PlanHolders{CheckEvery: p.every, Grace: p.grace}
	var lastClosed *workflows.PlanHolder
	var lastClose time.Time
	for _, h := range in.Holders {
		held, closed, err := p.holds(ctx, in.Hash, &h)
		if err != nil {
			return workflows.PlanHolders{}, err
		}
		switch {
		case held && !closed.IsZero() && time.Since(h.Since) >= p.grace:
			if lastClosed == nil || closed.After(lastClose) {
				lastClosed, lastClose = &h, closed
			}
		case held || time.Since(h.Since) < p.grace:
			out.Holders = append(out.Holders, h)
		}
	}
	if lastClosed != nil {
		out.Holders = append(out.Holders, *lastClosed)
	}
	return out, nil
}

// holds says whether h holds the plan: a run the server has, open or
// closed (then when it closed); a schedule whose action names the plan;
// then, once it no longer does (h.Left is set), a run it started before
// that the server has.
func (p *planChunks) holds(ctx context.Context, hash string, h *workflows.PlanHolder) (bool, time.Time, error) {
	var missing *serviceerror.NotFound
	if h.Run != "" {
		d, err := p.client.DescribeWorkflowExecution(ctx, h.Run, "")
		if errors.As(err, &missing) {
			return false, time.Time{}, nil
		}
		if err != nil {
			return false, time.Time{}, fmt.Errorf("describe run %s: %w", h.Run, err)
		}
		var closed time.Time
		if info := d.GetWorkflowExecutionInfo(); info.GetStatus() != enums.WORKFLOW_EXECUTION_STATUS_RUNNING {
			closed = info.GetCloseTime().AsTime()
		}
		return true, closed, nil
	}
	if h.Left == nil {
		desc, err := p.client.ScheduleClient().GetHandle(ctx, h.Schedule).Describe(ctx)
		if err != nil && !errors.As(err, &missing) {
			return false, time.Time{}, fmt.Errorf("describe schedule %s: %w", h.Schedule, err)
		}
		if err == nil && scheduleNames(desc, hash) {
			return true, time.Time{}, nil
		}
		if time.Since(h.Since) < p.grace {
			// porch stores a schedule's plan before it creates or
			// updates the schedule: it has not left the plan, it has
			// not reached it yet.
			return false, time.Time{}, nil
		}
		left := time.Now().UTC()
		h.Left = &left
	}
	n, err := p.client.CountWorkflow(ctx, &workflowservice.CountWorkflowExecutionsRequest{
		Query: fmt.Sprintf("TemporalScheduledById = %q AND StartTime < %q", h.Schedule, h.Left.Format(time.RFC3339Nano)),
	})
	if err != nil {
		return false, time.Time{}, fmt.Errorf("count schedule %s's runs: %w", h.Schedule, err)
	}
	return n.GetCount() > 0, time.Time{}, nil
}

// scheduleNames says whether a schedule's action starts runs of the plan
// hash names.
func scheduleNames(desc *client.ScheduleDescription, hash string) bool {
	action, ok := desc.Schedule.Action.(*client.ScheduleWorkflowAction)
	if !ok || len(action.Args) == 0 {
		return false
	}
	payload, ok := action.Args[0].(*commonpb.Payload)
	if !ok {
		return false
	}
	var in workflows.PipelineInput
	if converter.GetDefaultDataConverter().FromPayload(payload, &in) != nil || in.Plan == nil {
		return false
	}
	return in.Plan.Hash == hash
}
