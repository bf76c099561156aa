package parallel

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/porch-pipelines/porch/activities/entryscript"
	"github.com/porch-pipelines/porch/activities/minibatch"
	"github.com/porch-pipelines/porch/activities/stepio"
	"github.com/porch-pipelines/porch/compiler/plan"
	"github.com/porch-pipelines/porch/telemetry"
)

// PlanMiniBatches splits a parallel step's input_data into mini-batches. It
// writes the manifest and the step's settings next to the step's logs and
// returns only counts and a reference, so nothing in a workflow's history
// grows with the number of files or rows. When an earlier attempt of the
// step planned the same mini-batches, its finished ones are kept and
// counted as done.
func (a *Activities) PlanMiniBatches(ctx context.Context, in PlanMiniBatchesInput) (ParallelPlan, error) {
	a.RefreshDatastores(ctx, stepio.DataURIs(in.Inputs, in.Outputs)...)
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
	previous, err := f.plannedDigest(ctx)
	if err != nil {
		return ParallelPlan{}, fmt.Errorf("step %q: %w", in.StepPath, err)
	}
	sum, err := minibatch.Plan(data, f.manifest())
	var inputErr *minibatch.InputError
	if errors.As(err, &inputErr) {
		return ParallelPlan{}, stepio.Invalid("step %q: input %q: %v", in.StepPath, in.Parallel.InputData, err)
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
		if p.Done, err = f.countDone(ctx); err != nil {
			return p, fmt.Errorf("step %q: count finished mini-batches: %w", in.StepPath, err)
		}
	} else if err := a.resetParallel(ctx, f, in); err != nil {
		return p, fmt.Errorf("step %q: %w", in.StepPath, err)
	}
	// The manifest goes first and the spec, which names its digest, last:
	// a worker that finds the spec finds the manifest it belongs to.
	if err := f.share.publish(ctx, manifestRel); err != nil {
		return p, fmt.Errorf("step %q: publish the manifest: %w", in.StepPath, err)
	}
	if err := writeJSONFile(f.spec(), parallelSpec{Input: in, Plan: p}); err != nil {
		return p, fmt.Errorf("step %q: write %s: %w", in.StepPath, f.spec(), err)
	}
	if err := f.share.publish(ctx, specRel); err != nil {
		return p, fmt.Errorf("step %q: publish spec.json: %w", in.StepPath, err)
	}
	if err := writeReadme(f, p); err != nil {
		return p, fmt.Errorf("step %q: write readme: %w", in.StepPath, err)
	}
	notes := sum.Notes
	if env := in.Parallel.Task.Environment; env != "" && in.Parallel.Task.Env == nil {
		// A plan recorded before porch ran environments.
		notes = append(notes, fmt.Sprintf("the plan was compiled before porch ran environments: %q is not set up; entry scripts run on each worker's host with its Python (porch worker --python, PORCH_PYTHON, else python3) and what is installed there", env))
	}
	for _, note := range notes {
		_ = stepio.AppendLog(filepath.Join(f.logs, "sys", "porch.txt"), "porch: "+note)
	}
	if err := f.share.publishLogs(ctx, a.NodeName()); err != nil {
		return p, fmt.Errorf("step %q: publish logs: %w", in.StepPath, err)
	}
	return p, nil
}

// plannedDigest is the digest of the manifest an earlier attempt of the
// step planned, "" when none did.
func (f parallelFolders) plannedDigest(ctx context.Context) (string, error) {
	if _, err := f.share.fetch(ctx, specRel); err != nil {
		return "", fmt.Errorf("fetch spec.json: %w", err)
	}
	var s parallelSpec
	if err := readJSONFile(f.spec(), &s); err != nil {
		return "", nil // none, or unreadable: plan afresh
	}
	return s.Plan.Ref.Digest, nil
}

// inputData finds the input the step splits and where it is: a path on
// this worker, or a datastore the planner reads through its file system
// (the input is listed and read where it is, never copied).
func (a *Activities) inputData(ctx context.Context, in PlanMiniBatchesInput) (minibatch.Input, error) {
	for _, inp := range in.Inputs {
		if inp.Name != in.Parallel.InputData {
			continue
		}
		if inp.Value.Kind != plan.ValueData || inp.Value.Data == nil {
			return minibatch.Input{}, stepio.Invalid("step %q: input_data names input %q, which has no data: bind it to a uri_folder, uri_file or mltable", in.StepPath, inp.Name)
		}
		typ := inp.Type
		if inp.Value.Data.Type != "" {
			typ = inp.Value.Data.Type
		}
		data := minibatch.Input{Type: typ, Size: in.Parallel.MiniBatchSize, PartitionKeys: in.Parallel.PartitionKeys}
		if d, rest, ok := a.ObjectLocation(inp.Value.Data.Path); ok {
			s, err := a.ObjectStore(d)
			if err != nil {
				return data, stepio.StoreError(fmt.Sprintf("step %q: input %q: open datastore %q", in.StepPath, inp.Name, d.Name), err)
			}
			data.FS, data.Base = s.FS(ctx), stepio.DatastorePrefix+d.Name+"/paths/"
			data.Path = data.Base + strings.Trim(rest, "/")
			return data, nil
		}
		path, set, err := a.InputValue(ctx, in.StepPath, inp, "")
		if err != nil {
			return minibatch.Input{}, err
		}
		if !set {
			return minibatch.Input{}, stepio.Invalid("step %q: input_data names input %q, which has no data: bind it to a uri_folder, uri_file or mltable", in.StepPath, inp.Name)
		}
		data.Path = path
		return data, nil
	}
	return minibatch.Input{}, stepio.Invalid("step %q: input_data names input %q, which the step does not have: recompile the pipeline", in.StepPath, in.Parallel.InputData)
}

// resetParallel removes what an attempt with other mini-batches left: its
// results, logs and outputs on object storage would be mistaken for this
// one's.
func (a *Activities) resetParallel(ctx context.Context, f parallelFolders, in PlanMiniBatchesInput) error {
	if err := f.share.remove(ctx, doneRel, resultsRel, "logs", "user_logs"); err != nil {
		return fmt.Errorf("remove stale folders of an earlier attempt: %w", err)
	}
	for _, d := range []string{f.logs, filepath.Join(f.artifacts, "outputs"), filepath.Join(f.artifacts, "user_logs")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return fmt.Errorf("create artifacts folder: %w", err)
		}
	}
	for _, out := range in.Outputs {
		uri := out.Path
		if uri == "" {
			uri = plan.DefaultOutputURI(stepio.DatastoreOf(stepio.Step{DefaultDatastore: in.DefaultDatastore}), in.RunID, in.StepPath, out.Name)
		}
		d, rest, ok := a.ObjectLocation(uri)
		if !ok || out.Name == plan.ArtifactsOutput {
			continue
		}
		s, err := a.ObjectStore(d)
		if err == nil {
			err = s.RemoveAll(ctx, rest)
		}
		if err != nil {
			return stepio.StoreError(fmt.Sprintf("remove output %q of an earlier attempt from datastore %q", out.Name, d.Name), err)
		}
	}
	return nil
}

// RunMiniBatch processes one mini-batch in one of this worker's entry-script
// processes for the step. A mini-batch an earlier attempt finished is not
// run again. run()'s results go to a file of their own, committed with the
// mini-batch's done record, so FinishParallel appends each exactly once.
func (a *Activities) RunMiniBatch(ctx context.Context, in MiniBatchInput) (MiniBatchResult, error) {
	rt, beat, done, err := a.batchRuntime(ctx, in.Ref, a.BeatInterval())
	if err != nil {
		return MiniBatchResult{}, err
	}
	defer done()
	return a.runOne(ctx, rt, in.Index, in.PriorAttempts, beat, nil)
}

// RunMiniBatches processes mini-batches one after another, each as
// RunMiniBatch would. A mini-batch whose attempt fails (run() raised,
// returned too few results, timed out) is reported and the next one runs:
// the workflow runs it again on its own. Anything else (init() failing, a
// datastore error, cancellation) ends the group; the workflow then runs
// its mini-batches on their own, and those already done are skipped.
func (a *Activities) RunMiniBatches(ctx context.Context, in MiniBatchesInput) (MiniBatchesResult, error) {
	rt, beat, done, err := a.batchRuntime(ctx, in.Ref, a.groupBeatInterval(ctx))
	if err != nil {
		return MiniBatchesResult{}, err
	}
	defer done()
	var out MiniBatchesResult
	log := groupLog{written: time.Now()}
	for _, i := range in.Indexes {
		if ctx.Err() != nil {
			rt.flushStopping(ctx, &log)
			return out, stepio.Stopped(ctx)
		}
		res, err := a.runOne(ctx, rt, i, 0, beat, &log)
		var ae *temporal.ApplicationError
		switch {
		case err == nil:
			out.Succeeded = append(out.Succeeded, res)
		case errors.As(err, &ae) && ae.Type() == MiniBatchFailedType:
			var f MiniBatchFailure
			_ = ae.Details(&f)
			out.Failed = append(out.Failed, FailedMiniBatch{Failure: f, Message: ae.Message()})
		default:
			rt.flushStopping(ctx, &log)
			return out, err
		}
		if log.due() {
			if err := rt.flush(ctx, &log); err != nil {
				return out, fmt.Errorf("step %q: %w", in.Ref.StepPath, err)
			}
		}
	}
	if err := rt.flush(ctx, &log); err != nil {
		return out, fmt.Errorf("step %q: %w", in.Ref.StepPath, err)
	}
	return out, nil
}

// batchRuntime readies the step's runtime on this worker for a mini-batch
// activity, with the groups' done records written since its last one,
// and starts its heartbeats, one every interval, which say what beat
// holds; done stops them and releases the runtime.
func (a *Activities) batchRuntime(ctx context.Context, ref ParallelStepRef, interval time.Duration) (rt *parallelRuntime, beat *batchBeat, done func(), err error) {
	a.RefreshDatastores(ctx, ref.artifactsURI())
	if rt, err = a.parallel().get(ctx, a, ref); err != nil {
		return nil, nil, nil, err
	}
	if err := rt.groups.refresh(ctx, rt.folders); err != nil {
		rt.release()
		return nil, nil, nil, fmt.Errorf("step %q: read the groups' done records: %w", ref.StepPath, err)
	}
	beat = &batchBeat{}
	stop := a.BeatEvery(ctx, interval, beat.details)
	return rt, beat, func() {
		stop()
		rt.release()
	}, nil
}

// maxGroupBeat bounds the interval between a group's heartbeats.
const maxGroupBeat = 3 * time.Second

// groupBeatInterval is how often a group of mini-batches heartbeats: a
// tenth of its heartbeat timeout (progress_update_timeout), at most
// maxGroupBeat and at least the worker's beat interval. A heartbeat is
// a write on the server (a group's largest cost after its mini-batches:
// at one a second, 13% of the CPU profile of BenchmarkParallel/work); a
// group hears of a cancel at its next one, so the step's failure or
// cancellation waits for it, at most maxGroupBeat. A server stall
// shorter than the heartbeat timeout less this interval costs the group
// nothing, as a command's.
func (a *Activities) groupBeatInterval(ctx context.Context) time.Duration {
	every := a.BeatInterval()
	if !activity.IsActivity(ctx) {
		return every
	}
	return max(every, min(activity.GetInfo(ctx).HeartbeatTimeout/10, maxGroupBeat))
}

// batchBeat is what a mini-batch activity's heartbeats say: the
// mini-batch running now, its items and attempt.
type batchBeat struct {
	mu  sync.Mutex
	now MiniBatchBeat
}

func (b *batchBeat) set(now MiniBatchBeat) {
	b.mu.Lock()
	b.now = now
	b.mu.Unlock()
}

func (b *batchBeat) details() any {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.now
}

// runOne processes mini-batch index, whose earlier activities used prior
// attempts. Its done record goes into group's log, or with no group to a
// file of its own.
func (a *Activities) runOne(ctx context.Context, rt *parallelRuntime, index int, prior int32, beat *batchBeat, group *groupLog) (MiniBatchResult, error) {
	ref := rt.ref
	if r, ok, err := doneRecordIn(ctx, &rt.groups, rt.folders, index); err != nil {
		return MiniBatchResult{}, fmt.Errorf("step %q: read the done record of mini-batch %d: %w", ref.StepPath, index, err)
	} else if ok {
		r.Skipped = true
		return r, nil
	}
	b, err := rt.manifest.Batch(index)
	if err != nil {
		return MiniBatchResult{}, fmt.Errorf("step %q: read mini-batch %d: %w", ref.StepPath, index, err)
	}
	attempt := prior + 1
	if activity.IsActivity(ctx) {
		attempt = prior + activity.GetInfo(ctx).Attempt
	}
	// The mini-batch's objects on a datastore are fetched into a folder
	// of its own, removed when it ends: this worker reads nothing else of
	// the input.
	b, cleanup, err := rt.fetchBatch(ctx, b, attempt)
	defer cleanup()
	if err != nil {
		return MiniBatchResult{}, fmt.Errorf("step %q: mini-batch %d: %w", ref.StepPath, index, err)
	}
	req, err := rt.request(b, attempt)
	if err != nil {
		return MiniBatchResult{}, err
	}
	// Heartbeats go out once a second while the activity runs, not per
	// phase: a heartbeat is a server round trip and a write, too dear per
	// mini-batch. They let the server see a dead worker within the heartbeat
	// timeout and deliver the workflow's cancel quickly; the entry script's
	// own progress is watched by the pool (progress_update_timeout). The
	// details are what the workflow reads when the worker vanishes.
	beat.set(MiniBatchBeat{Items: b.Items, Attempt: attempt, Index: index})
	started := time.Now()
	res, runErr := rt.pool.Run(ctx, req)
	out := MiniBatchResult{Index: index, Items: res.Items, Returned: res.Returned, Node: a.NodeName(), Process: res.Process,
		Attempt: attempt, Format: res.Format, ElapsedMs: res.Elapsed.Milliseconds()}
	if runErr != nil {
		return out, rt.failed(ctx, b, attempt, started, runErr)
	}
	// The mini-batch may have waited for a free process (the workflow
	// keeps one waiting per process): it started when its process took it.
	started = time.Now().Add(-res.LoadElapsed - res.Elapsed)
	rt.report(reportRow{index: index, attempt: attempt, result: "succeeded", node: out.Node, process: res.Process,
		start: started, elapsed: res.Elapsed, items: res.Items, returned: res.Returned})
	telemetry.MiniBatchSucceeded(metricsHandler(ctx), res.Items, res.Elapsed)
	if err := rt.commit(ctx, out, req.ResultPath, group); err != nil {
		return out, fmt.Errorf("step %q: mini-batch %d: %w", ref.StepPath, index, err)
	}
	return out, nil
}

// commit makes a succeeded mini-batch's work visible: the files it wrote
// into outputs on object storage, its result, then its done record, which
// says the rest is there (in a group, once the group writes its records).
func (rt *parallelRuntime) commit(ctx context.Context, out MiniBatchResult, result string, group *groupLog) error {
	if err := rt.outputs.upload(ctx); err != nil {
		return err
	}
	f := rt.folders
	if result != "" {
		if _, err := os.Stat(result); err == nil {
			if err := f.share.publish(ctx, resultOf(out.Index)); err != nil {
				return fmt.Errorf("publish its results: %w", err)
			}
		}
	}
	if group != nil {
		group.pending = append(group.pending, out)
		return nil
	}
	if err := writeJSONFile(f.done(out.Index), out); err != nil {
		return fmt.Errorf("record it as done: %w", err)
	}
	if err := f.share.publish(ctx, doneOf(out.Index)); err != nil {
		return fmt.Errorf("record it as done: %w", err)
	}
	return nil
}

// failed reports a failed attempt and turns it into the activity's error.
func (rt *parallelRuntime) failed(ctx context.Context, b minibatch.Batch, attempt int32, started time.Time, err error) error {
	var be *entryscript.BatchError
	if !errors.As(err, &be) {
		if ctx.Err() != nil {
			rt.report(reportRow{index: b.Index, attempt: attempt, result: "canceled", node: rt.node, start: started, elapsed: time.Since(started), items: b.Items})
			return stepio.Stopped(ctx)
		}
		return fmt.Errorf("step %q: mini-batch %d: %w", rt.ref.StepPath, b.Index, err)
	}
	rt.report(reportRow{index: b.Index, attempt: attempt, result: "failed", node: rt.node, process: be.Process,
		start: started, elapsed: time.Since(started), items: be.Items, returned: be.Returned, err: be.Message})
	telemetry.MiniBatchFailed(metricsHandler(ctx), max(be.Items, b.Items), time.Since(started))
	failure := MiniBatchFailure{Index: b.Index, Kind: be.Kind, Items: max(be.Items, b.Items), Returned: be.Returned,
		Node: rt.node, Process: be.Process, Attempt: attempt, Log: rt.entryScriptLog(be.Process)}
	msg := fmt.Sprintf("mini-batch %d (attempt %d, %s/%s): %s", b.Index, attempt, rt.node, be.Process, be.Message)
	if be.Traceback != "" {
		msg += "\n" + stepio.LastLines(be.Traceback, 20)
	}
	// Other nodes cannot read this node's logs until it publishes them: a
	// failure's traces go out now (best effort), for job_error.txt.
	if err := rt.folders.share.publishLogs(ctx, rt.node); err != nil {
		rt.log(fmt.Sprintf("porch: publishing the logs of node %s: %v", rt.node, err))
	}
	if be.Kind == entryscript.KindInitFailed {
		return temporal.NewNonRetryableApplicationError(msg, EntryScriptInitFailedType, nil, failure)
	}
	return temporal.NewApplicationError(msg, MiniBatchFailedType, failure)
}

// metricsHandler is the activity's metrics handler, which carries its
// compute label; outside an activity (a test) metrics go nowhere.
func metricsHandler(ctx context.Context) client.MetricsHandler {
	if activity.IsActivity(ctx) {
		return activity.GetMetricsHandler(ctx)
	}
	return client.MetricsNopHandler
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
	a.RefreshDatastores(ctx, in.Ref.artifactsURI())
	f, err := a.parallelFolders(in.Ref)
	if err != nil {
		return PendingMiniBatches{}, err
	}
	spec, err := f.readSpec(ctx, in.Ref.StepPath, in.Ref.Digest)
	if err != nil {
		return PendingMiniBatches{}, err
	}
	n := spec.Plan.Batches
	out := PendingMiniBatches{Next: n}
	done := doneSet{f: f}
	for i := in.From; i < n; i++ {
		if len(out.Indexes) == in.Limit {
			out.Next = i
			break
		}
		ok, err := done.has(ctx, i)
		if err != nil {
			return out, fmt.Errorf("step %q: list finished mini-batches: %w", in.Ref.StepPath, err)
		}
		if !ok {
			out.Indexes = append(out.Indexes, i)
		}
	}
	return out, nil
}
