package activities

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/porch-pipelines/porch/activities/entryscript"
	"github.com/porch-pipelines/porch/activities/minibatch"
	"github.com/porch-pipelines/porch/compiler/plan"
)

// PlanMiniBatches splits a parallel step's input_data into mini-batches. It
// writes the manifest and the step's settings next to the step's logs and
// returns only counts and a reference, so nothing in a workflow's history
// grows with the number of files or rows. When an earlier attempt of the
// step planned the same mini-batches, its finished ones are kept and
// counted as done.
func (a *Activities) PlanMiniBatches(ctx context.Context, in PlanMiniBatchesInput) (ParallelPlan, error) {
	a.refreshDatastores(ctx)
	if a.Home == "" {
		return ParallelPlan{}, temporal.NewNonRetryableApplicationError(
			"the worker has no porch home folder: set PORCH_HOME or Activities.Home", "WorkerMisconfigured", nil)
	}
	ref := ParallelStepRef{RunID: in.RunID, StepPath: in.StepPath, Datastore: in.DefaultDatastore}
	if ref.Datastore == "" {
		ref.Datastore = plan.DefaultDatastore
	}
	f, err := a.parallelFolders(ref)
	if err != nil {
		return ParallelPlan{}, err
	}
	data, err := a.inputData(ctx, in)
	if err != nil {
		return ParallelPlan{}, err
	}
	previous := ""
	if m, err := minibatch.Open(f.manifest()); err == nil {
		previous = m.Summary().Digest
		m.Close()
	}
	sum, err := minibatch.Plan(data, f.manifest())
	var inputErr *minibatch.InputError
	if errors.As(err, &inputErr) {
		return ParallelPlan{}, invalidStep("step %q: input %q: %v", in.StepPath, in.Parallel.InputData, err)
	}
	if err != nil {
		return ParallelPlan{}, fmt.Errorf("step %q: plan mini-batches: %w", in.StepPath, err)
	}
	ref.Digest = sum.Digest
	p := ParallelPlan{
		Ref: ref, Batches: sum.Batches, Items: sum.Items, Files: sum.Files, Bytes: sum.Bytes, Tabular: sum.Tabular,
		Instances:   max(in.Parallel.Resources.InstanceCount, 1),
		PerInstance: in.Parallel.MaxConcurrencyPerInstance,
	}
	if p.PerInstance <= 0 {
		p.PerInstance = runtime.NumCPU()
	}
	if previous == sum.Digest {
		if p.Done, err = f.countDone(); err != nil {
			return p, fmt.Errorf("step %q: count finished mini-batches: %w", in.StepPath, err)
		}
	} else if err := f.reset(); err != nil {
		return p, fmt.Errorf("step %q: %w", in.StepPath, err)
	}
	if err := writeJSONFile(f.spec(), parallelSpec{Input: in, Plan: p}); err != nil {
		return p, fmt.Errorf("step %q: write %s: %w", in.StepPath, f.spec(), err)
	}
	if err := writeReadme(f, p); err != nil {
		return p, fmt.Errorf("step %q: write readme: %w", in.StepPath, err)
	}
	notes := sum.Notes
	if env := in.Parallel.Task.Environment; env != "" {
		notes = append(notes, fmt.Sprintf("porch does not provision environments: %q is not set up; entry scripts run on each worker's host with its Python (porch worker --python, PORCH_PYTHON, else python3) and what is installed there", env))
	}
	for _, note := range notes {
		_ = appendLog(filepath.Join(f.logs, "sys", "porch.txt"), "porch: "+note)
	}
	return p, nil
}

// inputData finds the input the step splits and where it is on this worker.
func (a *Activities) inputData(ctx context.Context, in PlanMiniBatchesInput) (minibatch.Input, error) {
	for _, inp := range in.Inputs {
		if inp.Name != in.Parallel.InputData {
			continue
		}
		path, set, err := a.inputValue(ctx, in.StepPath, inp, "")
		if err != nil {
			return minibatch.Input{}, err
		}
		if !set || inp.Value.Kind != plan.ValueData {
			return minibatch.Input{}, invalidStep("step %q: input_data names input %q, which has no data: bind it to a uri_folder, uri_file or mltable", in.StepPath, inp.Name)
		}
		typ := inp.Type
		if inp.Value.Data.Type != "" {
			typ = inp.Value.Data.Type
		}
		return minibatch.Input{Type: typ, Path: path, Size: in.Parallel.MiniBatchSize, PartitionKeys: in.Parallel.PartitionKeys}, nil
	}
	return minibatch.Input{}, invalidStep("step %q: input_data names input %q, which the step does not have: recompile the pipeline", in.StepPath, in.Parallel.InputData)
}

// reset removes what an attempt with other mini-batches left: its results
// and logs would be mistaken for this one's.
func (f parallelFolders) reset() error {
	for _, d := range []string{filepath.Join(f.state, "done"), filepath.Join(f.state, "results"), f.logs, filepath.Join(f.artifacts, "user_logs")} {
		if err := os.RemoveAll(d); err != nil {
			return fmt.Errorf("remove stale folder of an earlier attempt: %w", err)
		}
	}
	for _, d := range []string{f.logs, filepath.Join(f.artifacts, "outputs"), filepath.Join(f.artifacts, "user_logs")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return fmt.Errorf("create artifacts folder: %w", err)
		}
	}
	return nil
}

// RunMiniBatch processes one mini-batch in one of this worker's entry-script
// processes for the step. A mini-batch an earlier attempt finished is not
// run again. run()'s results go to a file of their own, committed with the
// mini-batch's done record, so FinishParallel appends each exactly once.
func (a *Activities) RunMiniBatch(ctx context.Context, in MiniBatchInput) (MiniBatchResult, error) {
	a.refreshDatastores(ctx)
	rt, err := a.parallel().get(a, in.Ref)
	if err != nil {
		return MiniBatchResult{}, err
	}
	defer rt.release()
	if r, ok := rt.folders.doneRecord(in.Index); ok {
		r.Skipped = true
		return r, nil
	}
	b, err := rt.manifest.Batch(in.Index)
	if err != nil {
		return MiniBatchResult{}, fmt.Errorf("step %q: read mini-batch %d: %w", in.Ref.StepPath, in.Index, err)
	}
	attempt := int32(1)
	if activity.IsActivity(ctx) {
		attempt = activity.GetInfo(ctx).Attempt
	}
	req, err := rt.request(b, attempt)
	if err != nil {
		return MiniBatchResult{}, err
	}
	// Heartbeats go out once a second while the mini-batch runs, not per
	// phase: a heartbeat is a server round trip and a write, too dear per
	// mini-batch. They let the server see a dead worker within the heartbeat
	// timeout and deliver the workflow's cancel quickly; the entry script's
	// own progress is watched by the pool (progress_update_timeout). The
	// details are the item count, which the workflow reads when the worker
	// vanishes.
	stop := a.beatWhile(ctx, func() any { return b.Items })
	started := time.Now()
	res, runErr := rt.pool.Run(ctx, req)
	stop()
	out := MiniBatchResult{Index: in.Index, Items: res.Items, Returned: res.Returned, Node: a.node(), Process: res.Process, Attempt: attempt, Format: res.Format}
	if runErr != nil {
		return out, rt.failed(ctx, b, attempt, started, runErr)
	}
	rt.report(reportRow{index: in.Index, attempt: attempt, result: "succeeded", node: out.Node, process: res.Process,
		start: started, elapsed: res.Elapsed, items: res.Items, returned: res.Returned})
	if err := writeJSONFile(rt.folders.done(in.Index), out); err != nil {
		return out, fmt.Errorf("step %q: record mini-batch %d as done: %w", in.Ref.StepPath, in.Index, err)
	}
	return out, nil
}

// failed reports a failed attempt and turns it into the activity's error.
func (rt *parallelRuntime) failed(ctx context.Context, b minibatch.Batch, attempt int32, started time.Time, err error) error {
	var be *entryscript.BatchError
	if !errors.As(err, &be) {
		if ctx.Err() != nil {
			rt.report(reportRow{index: b.Index, attempt: attempt, result: "canceled", node: rt.node, start: started, elapsed: time.Since(started), items: b.Items})
			return ctx.Err()
		}
		return fmt.Errorf("step %q: mini-batch %d: %w", rt.ref.StepPath, b.Index, err)
	}
	rt.report(reportRow{index: b.Index, attempt: attempt, result: "failed", node: rt.node, process: be.Process,
		start: started, elapsed: time.Since(started), items: be.Items, returned: be.Returned, err: be.Message})
	failure := MiniBatchFailure{Index: b.Index, Kind: be.Kind, Items: max(be.Items, b.Items), Returned: be.Returned,
		Node: rt.node, Process: be.Process, Attempt: attempt, Log: rt.entryScriptLog(be.Process)}
	msg := fmt.Sprintf("mini-batch %d (attempt %d, %s/%s): %s", b.Index, attempt, rt.node, be.Process, be.Message)
	if be.Traceback != "" {
		msg += "\n" + lastLines(be.Traceback, 20)
	}
	if be.Kind == entryscript.KindInitFailed {
		return temporal.NewNonRetryableApplicationError(msg, EntryScriptInitFailedType, nil, failure)
	}
	return temporal.NewApplicationError(msg, MiniBatchFailedType, failure)
}

// recordHeartbeat records a heartbeat when ctx is an activity's.
func recordHeartbeat(ctx context.Context, details ...any) {
	if activity.IsActivity(ctx) {
		activity.RecordHeartbeat(ctx, details...)
	}
}

// ListPendingMiniBatches pages through the mini-batches that no attempt has
// finished, so a resumed step runs only those without an activity per
// finished one.
func (a *Activities) ListPendingMiniBatches(ctx context.Context, in ListPendingInput) (PendingMiniBatches, error) {
	a.refreshDatastores(ctx)
	f, err := a.parallelFolders(in.Ref)
	if err != nil {
		return PendingMiniBatches{}, err
	}
	m, err := minibatch.Open(f.manifest())
	if err != nil {
		return PendingMiniBatches{}, fmt.Errorf("step %q: open manifest: %w", in.Ref.StepPath, err)
	}
	defer m.Close()
	out := PendingMiniBatches{Next: m.Len()}
	for i := in.From; i < m.Len(); i++ {
		if len(out.Indexes) == in.Limit {
			out.Next = i
			break
		}
		if _, err := os.Stat(f.done(i)); err != nil {
			out.Indexes = append(out.Indexes, i)
		}
	}
	return out, nil
}
