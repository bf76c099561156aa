package cli

import (
	"context"
	"strings"
	"time"

	"github.com/porch-pipelines/porch/compiler/plan"
	"github.com/porch-pipelines/porch/workflows"
	"go.temporal.io/sdk/client"
)

// pollInterval is how often the steps query is polled while watching.
const pollInterval = 300 * time.Millisecond

// queryTimeout bounds one steps query (one page of a large run's steps), so
// a server without workers does not hang the watcher.
const queryTimeout = 5 * time.Second

// stepWatcher reads a run's steps, nested pipelines included, through the
// steps query.
type stepWatcher struct {
	c client.Client
	// done caches the steps of nested pipelines that have finished: they
	// no longer change.
	done map[string][]workflows.StepState
	// details caches the progress of parallel steps that have finished.
	details map[string]string
	// workers finds steps waiting for a worker; nil looks for none.
	workers *workerCheck
}

func newStepWatcher(c client.Client) *stepWatcher {
	return &stepWatcher{c: c, done: map[string][]workflows.StepState{}, details: map[string]string{}}
}

// snapshot returns every step of the pipeline workflow id, each nested
// pipeline's steps right after its own row.
func (w *stepWatcher) snapshot(ctx context.Context, id string) ([]workflows.StepState, error) {
	steps, err := w.query(ctx, id)
	if err != nil {
		return nil, err
	}
	out := make([]workflows.StepState, 0, len(steps))
	for _, s := range steps {
		// A reused step started no workflow of its own to ask.
		if s.Status != workflows.StatusWaiting && s.Status != workflows.StatusSkipped && s.Status != workflows.StatusReused {
			switch s.Type {
			case plan.StepParallel:
				s.Detail = w.parallelDetail(ctx, s)
			case plan.StepSweep:
				s.Detail = w.sweepDetail(ctx, s)
			}
			if s.Spot && s.Status == workflows.StatusRunning {
				if d := w.spotDetail(ctx, s); d != "" {
					s.Detail = strings.TrimPrefix(s.Detail+"; "+d, "; ")
				}
			}
			if s.Claims && s.Status == workflows.StatusRunning {
				if wait := w.quotaDetail(ctx, s); wait != "" {
					s.Detail = wait
				}
			}
			if d := w.workers.detail(ctx, s, time.Now()); d != "" {
				s.Detail = strings.TrimPrefix(s.Detail+"; "+d, "; ")
			}
		}
		out = append(out, s)
		if s.Type != plan.StepPipeline || s.WorkflowID == "" || s.Status == workflows.StatusWaiting ||
			s.Status == workflows.StatusSkipped {
			continue
		}
		if cached, ok := w.done[s.WorkflowID]; ok {
			out = append(out, cached...)
			continue
		}
		// A nested pipeline that has not started yet answers nothing: show
		// its row alone until it does.
		sub, err := w.snapshot(ctx, s.WorkflowID)
		if err != nil {
			continue
		}
		if finished(s.Status) {
			w.done[s.WorkflowID] = sub
		}
		out = append(out, sub...)
	}
	return out, nil
}

// parallelDetail is a parallel step's progress from its own workflow, ""
// when it cannot answer (not started yet, or no worker).
func (w *stepWatcher) parallelDetail(ctx context.Context, s workflows.StepState) string {
	if d, ok := w.details[s.WorkflowID]; ok {
		return d
	}
	ctx, cancel := context.WithTimeout(ctx, queryTimeout)
	defer cancel()
	v, err := w.c.QueryWorkflow(ctx, s.WorkflowID, "", workflows.ProgressQuery)
	if err != nil {
		return ""
	}
	var p workflows.ParallelProgress
	if v.Get(&p) != nil {
		return ""
	}
	d := p.Summary()
	if finished(s.Status) {
		w.details[s.WorkflowID] = d
	}
	return d
}

// quotaDetail says what quota a running step waits for, "" once it has its
// cores; a step admitted is not asked again.
func (w *stepWatcher) quotaDetail(ctx context.Context, s workflows.StepState) string {
	if d, ok := w.details[s.WorkflowID]; ok {
		return d
	}
	ctx, cancel := context.WithTimeout(ctx, queryTimeout)
	defer cancel()
	wait, admitted, err := workflows.QuotaWait(ctx, w.c, s.WorkflowID)
	if err != nil {
		return ""
	}
	if admitted {
		w.details[s.WorkflowID] = ""
	}
	return wait
}

// sweepDetail is a sweep step's trials in a few words.
func (w *stepWatcher) sweepDetail(ctx context.Context, s workflows.StepState) string {
	if d, ok := w.details[s.WorkflowID]; ok {
		return d
	}
	p, ok := sweepProgress(ctx, w.c, s.WorkflowID)
	if !ok {
		return ""
	}
	d := p.Summary()
	if finished(s.Status) {
		w.details[s.WorkflowID] = d
	}
	return d
}

func (w *stepWatcher) query(ctx context.Context, id string) ([]workflows.StepState, error) {
	return workflows.QuerySteps(ctx, w.c, id, queryTimeout)
}

// finished says whether a step status is final.
func finished(s workflows.StepStatus) bool {
	switch s {
	case workflows.StatusSucceeded, workflows.StatusFailed, workflows.StatusSkipped, workflows.StatusCanceled, workflows.StatusReused:
		return true
	}
	return false
}

// watchOutcome is how watching a run ended.
type watchOutcome struct {
	result workflows.PipelineResult
	// err is the run's error; nil when it succeeded.
	err   error
	steps []workflows.StepState
	// interrupted is set when ctx ended before the run did.
	interrupted bool
}

// watch shows progress of run until it closes or ctx ends. Every
// noWorkerInterval it says which running steps wait for a worker.
func (a *app) watch(ctx context.Context, sess *session, run client.WorkflowRun, p progress) watchOutcome {
	w := newStepWatcher(sess.client)
	w.workers = newWorkerCheck(sess.client, sess.settings.connectFlags(), a.noWorkerInterval())
	getCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	defer cancel()
	var out watchOutcome
	done := make(chan error, 1)
	go func() { done <- run.Get(getCtx, &out.result) }()
	tick := time.NewTicker(pollInterval)
	defer tick.Stop()
	for {
		select {
		case err := <-done:
			out.err = err
			out.steps = a.finalSteps(getCtx, w, run.GetID(), out.steps)
			p.Done(time.Now(), out.steps)
			return out
		case <-tick.C:
			if steps, err := w.snapshot(getCtx, run.GetID()); err == nil {
				out.steps = steps
				p.Update(time.Now(), steps)
			}
		case <-ctx.Done():
			out.interrupted = true
			return out
		}
	}
}

// finalSteps re-reads the steps of a closed run, keeping the last snapshot
// when the query cannot answer; those a terminated run left running end
// with it.
func (a *app) finalSteps(ctx context.Context, w *stepWatcher, id string, last []workflows.StepState) []workflows.StepState {
	steps, err := w.snapshot(ctx, id)
	if err != nil {
		steps = last
	}
	if desc, err := w.c.DescribeWorkflowExecution(ctx, id, ""); err == nil {
		steps = endedWithRun(steps, desc.GetWorkflowExecutionInfo())
	}
	return steps
}
