package workflows

import (
	"errors"
	"fmt"
	"strings"
	"time"

	enums "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/porch-pipelines/porch/activities/command"
	"github.com/porch-pipelines/porch/activities/parallel"
	"github.com/porch-pipelines/porch/activities/stepio"
	"github.com/porch-pipelines/porch/compiler/plan"
)

// Parallel step settings.
const (
	// maxWindow caps the mini-batches in flight at once, well under
	// Temporal's limit of 2,000 pending activities per workflow.
	maxWindow = 1000
	// pendingPage is how many unfinished mini-batches a resumed step lists
	// at a time.
	pendingPage = 500
	// progressEvery is how often the step's progress overview gets a line.
	progressEvery = 30 * time.Second
	// planTimeout bounds planning the mini-batches.
	planTimeout = time.Hour
	// batchSlack is what a mini-batch's start-to-close timeout allows on
	// top of task_overhead_timeout and retry_settings.timeout: a new
	// process's start and init() (which may load a model), and the slack
	// that lets the entry-script pool enforce the step's own timeouts (and
	// say which one) before Temporal does.
	batchSlack = 10 * time.Minute
	// defaultProgressTimeout is the heartbeat timeout when the step sets
	// no progress_update_timeout: how long a silent worker is trusted.
	defaultProgressTimeout = 30 * time.Second
)

// ParallelFailedType is the application error type of a parallel step that
// crossed one of its error thresholds.
const ParallelFailedType = "ParallelStepFailed"

// ParallelStep is the workflow of one parallel step: it has the input planned
// into mini-batches, runs them through a sliding window of RunMiniBatch
// activities (RunMiniBatches for groups of short ones) on the step's
// compute, enforces the error thresholds, and
// continues as new when its history grows long, carrying only counters.
func ParallelStep(ctx workflow.Context, in ParallelStepInput) (_ ParallelStepResult, err error) {
	defer func(ctx workflow.Context) { err = headline(ctx, in.Plan.StepPath, err) }(ctx)
	// A serverless step picks its instance type once: a run continued as
	// new carries the chosen queue.
	if placement, err := placeServerless(ctx, &in.Plan.Parallel.Resources); err != nil {
		return ParallelStepResult{}, err
	} else if placement != "" {
		workflow.GetLogger(ctx).Info(placement)
	}
	r := &parallelRun{in: in, progress: ParallelProgress{Phase: PhasePlanning}}
	if err := setQuery(ctx, ProgressQuery, func() (ParallelProgress, error) {
		return r.snapshot(), nil
	}); err != nil {
		return ParallelStepResult{}, err
	}
	if in.Plan.Parallel.Resources.Spot() {
		// Only spot steps answer, so other histories are unchanged.
		if err := setQuery(ctx, SpotQuery, func() (SpotState, error) {
			if r.st == nil {
				return SpotState{}, nil
			}
			return r.st.Spot.spotState(), nil
		}); err != nil {
			return ParallelStepResult{}, err
		}
	}
	release := func() {}
	if in.Quota != nil {
		// The step holds its instances' cores from before it plans until
		// its last run ends; a run continued as new holds them already.
		st := QuotaAdmission{Admitted: in.State != nil}
		if err := setQuery(ctx, QuotaWaitQuery, func() (QuotaAdmission, error) { return st, nil }); err != nil {
			return ParallelStepResult{}, err
		}
		if st.Admitted {
			release = releaseQuota(ctx, in.Quota.Pools)
		} else {
			var err error
			if release, err = admit(ctx, in.Quota, &st); err != nil {
				return ParallelStepResult{}, err
			}
		}
	}
	if in.State == nil {
		r.show(ctx)
		if err := r.plan(ctx); err != nil {
			release()
			return ParallelStepResult{}, err
		}
	}
	r.st = in.State
	if r.st == nil {
		r.st = r.initial
	}
	r.progress.Phase = PhaseRunning
	r.show(ctx)
	outcome := r.runBatches(ctx)
	if outcome.continueAsNew {
		r.awaitHolds(ctx)
		next := in
		next.State = r.st
		return ParallelStepResult{}, workflow.NewContinueAsNewError(ctx, ParallelStepName, next)
	}
	defer release()
	return r.finish(ctx, outcome)
}

// parallelRun is one run (between continue-as-new) of a parallel step.
type parallelRun struct {
	in       ParallelStepInput
	initial  *ParallelState
	st       *ParallelState
	progress ParallelProgress
	monitors map[string]bool
	// stopMonitors cancels the resource monitors this run started, in
	// the order it started them.
	stopMonitors []workflow.CancelFunc
	// failoverVersion caches failover's answer, monitorsVersion
	// monitorsEnd's.
	failoverVersion *bool
	monitorsVersion *bool
	// monitorEnds are the monitors' futures by node, to wait for them to
	// stop; lostNodes the nodes known lost, whose monitors never will.
	monitorEnds []nodeFuture
	lostNodes   []string
	// holdsVersion caches holdsEnd's answer; holdEnds are the holds'
	// futures, to wait for them to stop once released.
	holdsVersion *bool
	holdEnds     []workflow.Future
	// prefetch says the window keeps a mini-batch waiting for each
	// process (prefetchChange).
	prefetch bool
	// grouped says short mini-batches run several to an activity
	// (groupsChange).
	grouped bool
	// bookQueue is where a step running as instances lists pending
	// mini-batches and reports progress: a held node's queue, as the
	// type's queue may have no room left while the step holds it.
	bookQueue string
}

// bookkeepingQueue is where the step's short activities run while its
// mini-batches do.
func (r *parallelRun) bookkeepingQueue() string {
	if r.bookQueue != "" {
		return r.bookQueue
	}
	return r.queue()
}

func (r *parallelRun) snapshot() ParallelProgress {
	p := r.progress
	if r.st != nil {
		p.Plan = r.st.Plan
		p.Counters = r.st.Counters
		p.Started = r.st.Started
		p.Nodes = r.st.Nodes
	}
	return p
}

// plan runs PlanMiniBatches on the step's compute.
func (r *parallelRun) plan(ctx workflow.Context) error {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		Summary:             "plan mini-batches",
		TaskQueue:           r.queue(),
		StartToCloseTimeout: planTimeout,
		RetryPolicy: &temporal.RetryPolicy{
			MaximumAttempts:        infraAttempts,
			NonRetryableErrorTypes: []string{stepio.InvalidStepType},
		},
	})
	var p parallel.ParallelPlan
	// Planning is the step's first work on its compute: while no worker
	// of it polls, the step says so in its current details.
	fut := workflow.ExecuteActivity(ctx, parallel.PlanMiniBatchesName, r.in.Plan)
	runWatchingForWorker(ctx, fut, r.in.Compute, r.queue(), false)
	if err := fut.Get(ctx, &p); err != nil {
		return err
	}
	r.initial = &ParallelState{
		Plan:     p,
		Started:  workflow.Now(ctx),
		Resuming: p.Done > 0,
		Counters: parallel.ParallelCounters{Batches: p.Batches},
	}
	return nil
}

// prefetchChange is the GetVersion id of a parallel step's window:
// version 1 keeps twice as many mini-batches in flight as the step has
// entry-script processes, where DefaultVersion kept one per process. A
// process that finishes a mini-batch then finds the next one waiting on
// its worker, rather than idling for the round trip through the server
// (completion, workflow task, schedule, dispatch): measured at 30-50 ms
// a mini-batch on the loaded 2-core machine, 13-18% of a 50 ms run().
const prefetchChange = "parallel-prefetch"

// window is how many mini-batches run at once: every entry-script process
// of every instance busy, and with prefetch one more waiting for each.
func (st *ParallelState) window(prefetch bool) int {
	n := max(st.Plan.Instances*st.Plan.PerInstance, 1)
	if prefetch {
		n *= 2
	}
	return min(n, maxWindow)
}

// batchOutcome is how the window loop ended.
type batchOutcome struct {
	continueAsNew bool
	// err is the step's failure: a threshold crossed, init() failing, or
	// cancellation.
	err error
}

// runBatches runs the sliding window until every mini-batch has ended, the
// step fails, or the history asks to continue as new.
func (r *parallelRun) runBatches(ctx workflow.Context) batchOutcome {
	if r.onInstances(ctx) {
		return r.runOnInstances(ctx)
	}
	st := r.st
	r.prefetch = workflow.GetVersion(ctx, prefetchChange, workflow.DefaultVersion, 1) == 1
	// Spot steps keep one mini-batch to an activity: a preempted worker's
	// mini-batches are tracked one by one.
	r.grouped = !r.in.Plan.Parallel.Resources.Spot() &&
		workflow.GetVersion(ctx, groupsChange, workflow.DefaultVersion, 1) == 1
	window := st.window(r.prefetch)
	batchCtx, cancelBatches := workflow.WithCancel(ctx)
	sel := workflow.NewSelector(ctx)
	running := 0
	var failure error
	fail := func(err error) {
		if err != nil && failure == nil {
			failure = err
			cancelBatches()
		}
	}
	draining := false
	for {
		for failure == nil && !draining && ctx.Err() == nil && running < window {
			batch, ok := r.nextBatch(ctx, window)
			if !ok {
				break
			}
			running++
			st.Counters.Running = running
			if len(batch) > 1 {
				f := workflow.ExecuteActivity(r.groupOptions(batchCtx, batch), parallel.RunMiniBatchesName,
					parallel.MiniBatchesInput{Ref: st.Plan.Ref, Indexes: batch})
				sel.AddFuture(f, func(f workflow.Future) {
					running--
					st.Counters.Running = running
					fail(r.groupEnded(ctx, f, batch))
				})
				continue
			}
			i := batch[0]
			actx, onSpot := r.spotBatch(r.retried(r.batchOptions(batchCtx, i), i), i)
			f := workflow.ExecuteActivity(actx, parallel.RunMiniBatchName,
				parallel.MiniBatchInput{Ref: st.Plan.Ref, Index: i, PriorAttempts: st.lostAttempts(i)})
			sel.AddFuture(f, func(f workflow.Future) {
				running--
				st.Counters.Running = running
				if onSpot && r.preempted(ctx, f, i) {
					return
				}
				st.Spot.forget(i)
				st.forgetLost(i)
				fail(r.ended(ctx, f))
			})
		}
		if running == 0 {
			break
		}
		sel.Select(ctx)
		if ctx.Err() != nil && failure == nil {
			failure = temporal.NewCanceledError()
			cancelBatches()
		}
		if !draining && workflow.GetInfo(ctx).GetContinueAsNewSuggested() {
			draining = true
		}
		r.show(ctx)
		r.reportProgress(ctx)
	}
	if failure != nil {
		return batchOutcome{err: failure}
	}
	if draining && (st.Next < st.Plan.Batches || len(st.Pending) > 0 || len(st.Preempted) > 0) {
		return batchOutcome{continueAsNew: true}
	}
	return batchOutcome{}
}

// nextIndex is the next mini-batch to start. A resumed step pages through
// the unfinished ones; otherwise they go in order.
func (r *parallelRun) nextIndex(ctx workflow.Context) (int, bool) {
	st := r.st
	if i, ok := r.nextPreempted(); ok {
		return i, true
	}
	if len(st.Requeued) > 0 {
		i := st.Requeued[0]
		st.Requeued = st.Requeued[1:]
		return i, true
	}
	if !st.Resuming {
		if st.Next >= st.Plan.Batches {
			return 0, false
		}
		st.Next++
		return st.Next - 1, true
	}
	for len(st.Pending) == 0 && st.Next < st.Plan.Batches {
		actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
			Summary:             fmt.Sprintf("list unfinished mini-batches from %d", st.Next),
			TaskQueue:           r.bookkeepingQueue(),
			StartToCloseTimeout: 10 * time.Minute,
			RetryPolicy:         &temporal.RetryPolicy{MaximumAttempts: infraAttempts},
		})
		var page parallel.PendingMiniBatches
		in := parallel.ListPendingInput{Ref: st.Plan.Ref, From: st.Next, Limit: pendingPage}
		if err := workflow.ExecuteActivity(actx, parallel.ListPendingMiniBatchesName, in).Get(ctx, &page); err != nil {
			// Listing failed for good: run the rest in order; finished
			// mini-batches are skipped by RunMiniBatch itself.
			st.Resuming = false
			return r.nextIndex(ctx)
		}
		st.Pending, st.Next = page.Indexes, page.Next
	}
	if len(st.Pending) == 0 {
		return 0, false
	}
	i := st.Pending[0]
	st.Pending = st.Pending[1:]
	return i, true
}

// batchOptions are a mini-batch activity's options: retry_settings as the
// retry policy (its timeout twice over with prefetch, as a mini-batch may
// wait for another), progress_update_timeout as the heartbeat timeout, and
// first_task_creation_timeout while no mini-batch has ended yet. Its
// label names mini-batch i.
func (r *parallelRun) batchOptions(ctx workflow.Context, i int) workflow.Context {
	p := r.in.Plan.Parallel
	run := time.Duration(p.Retry.TimeoutSeconds+p.TaskOverheadTimeoutSeconds) * time.Second
	if r.prefetch {
		// A mini-batch may wait for its process to finish the one before.
		run *= 2
	}
	opts := workflow.ActivityOptions{
		Summary:             miniBatchSummary(i, p, r.st.Plan),
		TaskQueue:           r.in.Plan.Parallel.Resources.Queue(r.in.Compute),
		StartToCloseTimeout: run + batchSlack,
		HeartbeatTimeout:    r.heartbeat(),
		WaitForCancellation: true,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval:        time.Second,
			BackoffCoefficient:     1,
			MaximumAttempts:        int32(p.Retry.MaxRetries + 1),
			NonRetryableErrorTypes: []string{parallel.EntryScriptInitFailedType, stepio.InvalidStepType},
		},
	}
	if c := r.st.Counters; c.Processed()-c.Skipped == 0 && p.FirstTaskCreationTimeoutSeconds > 0 {
		opts.ScheduleToStartTimeout = time.Duration(p.FirstTaskCreationTimeoutSeconds) * time.Second
	}
	return workflow.WithActivityOptions(ctx, opts)
}

// heartbeat is the step's heartbeat timeout: progress_update_timeout, or
// defaultProgressTimeout.
func (r *parallelRun) heartbeat() time.Duration {
	if s := r.in.Plan.Parallel.ProgressUpdateTimeoutSeconds; s > 0 {
		return time.Duration(s) * time.Second
	}
	return defaultProgressTimeout
}

// ended records a mini-batch's end. It returns the step's failure when the
// mini-batch makes the step fail.
func (r *parallelRun) ended(ctx workflow.Context, f workflow.Future) error {
	var res parallel.MiniBatchResult
	err := f.Get(ctx, &res)
	if err == nil {
		r.succeeded(ctx, res)
		return nil
	}
	if isCanceled(err) {
		return nil
	}
	if err := r.fatal(err); err != nil {
		return err
	}
	return r.failed(ctx, err)
}

// succeeded counts a succeeded mini-batch, and the time run() took on it.
func (r *parallelRun) succeeded(ctx workflow.Context, res parallel.MiniBatchResult) {
	st := r.st
	st.Counters.Succeeded++
	if res.Skipped {
		st.Counters.Skipped++
	} else {
		st.Ran++
		st.RanMs += res.ElapsedMs
	}
	st.Counters.Items += int64(res.Items)
	st.Counters.ShortItems += int64(max(res.Items-res.Returned, 0))
	r.sawNode(ctx, res.Node)
}

// fatal is the step's failure when a mini-batch activity's error means no
// mini-batch can run: init() failed, the step is invalid as written, or no
// worker took the first mini-batches in time. Otherwise it is nil.
func (r *parallelRun) fatal(err error) error {
	var ae *temporal.ApplicationError
	if errors.As(err, &ae) && ae.Type() == parallel.EntryScriptInitFailedType {
		return failStep("the entry script's init() failed: ", err, parallel.EntryScriptInitFailedType)
	}
	if errors.As(err, &ae) && ae.Type() == stepio.InvalidStepType {
		// No mini-batch can run as written: fail now, whatever the
		// thresholds allow.
		return failStep("", err, stepio.InvalidStepType)
	}
	var te *temporal.TimeoutError
	if errors.As(err, &te) && te.TimeoutType() == enums.TIMEOUT_TYPE_SCHEDULE_TO_START {
		return temporal.NewNonRetryableApplicationError(fmt.Sprintf(
			"no mini-batch started within first_task_creation_timeout (%ds): no worker serves compute %q; start one with `porch worker --compute %s`",
			r.in.Plan.Parallel.FirstTaskCreationTimeoutSeconds, computeName(r.in.Compute), computeName(r.in.Compute)), ParallelFailedType, nil)
	}
	return nil
}

// failed counts a mini-batch that failed its last attempt. It returns the
// step's failure when that crosses an error threshold.
func (r *parallelRun) failed(ctx workflow.Context, err error) error {
	st := r.st
	failure := batchFailure(err)
	st.Counters.Failed++
	st.Counters.Items += int64(failure.Items)
	st.Counters.FailedItems += int64(max(failure.Items-failure.Returned, 0))
	if failure.Node != "" {
		r.sawNode(ctx, failure.Node)
	}
	if reason := crossedThreshold(r.in.Plan.Parallel, st.Counters); reason != "" {
		return failStep(reason+"; last failure: ", err, ParallelFailedType)
	}
	return nil
}

// failStep is the step's error: the prefix and the mini-batch's one-line
// message, with the rest (a Python traceback) and the entry-script log as
// details, as a failed command's stderr tail and log.
func failStep(prefix string, batchErr error, errType string) error {
	first, rest, _ := strings.Cut(ErrorMessage(batchErr), "\n")
	f := batchFailure(batchErr)
	var tail []string
	for _, l := range strings.Split(rest, "\n") {
		if strings.TrimSpace(l) != "" {
			tail = append(tail, l)
		}
	}
	return temporal.NewNonRetryableApplicationError(prefix+first, errType, nil,
		command.CommandFailure{StderrTail: tail, LogFile: f.Log, Attempt: f.Attempt})
}

func computeName(c string) string {
	if c == "" {
		return "default"
	}
	return c
}

// batchFailure reads a failed mini-batch's details: from the error, or for a
// worker that vanished, from its last heartbeat (the item count).
func batchFailure(err error) parallel.MiniBatchFailure {
	var f parallel.MiniBatchFailure
	var ae *temporal.ApplicationError
	if errors.As(err, &ae) && ae.HasDetails() {
		_ = ae.Details(&f)
		return f
	}
	var te *temporal.TimeoutError
	if errors.As(err, &te) && te.HasLastHeartbeatDetails() {
		var beat parallel.MiniBatchBeat
		if te.LastHeartbeatDetails(&beat) == nil {
			f.Items, f.Attempt = beat.Items, beat.Attempt
		} else {
			// Workers before MiniBatchBeat sent the item count alone.
			_ = te.LastHeartbeatDetails(&f.Items)
		}
	}
	return f
}

// crossedThreshold says which error threshold the counters crossed, with
// the counts, or "" for none.
func crossedThreshold(p plan.Parallel, c parallel.ParallelCounters) string {
	switch {
	case p.MiniBatchErrorThreshold >= 0 && c.Failed > p.MiniBatchErrorThreshold:
		return fmt.Sprintf("mini_batch_error_threshold crossed: %s failed, more than the %d allowed (%d of %d processed)",
			plural(int64(c.Failed), "mini-batch", "mini-batches"), p.MiniBatchErrorThreshold, c.Processed(), c.Batches)
	case p.ErrorThreshold >= 0 && c.FailedItems > int64(p.ErrorThreshold):
		return fmt.Sprintf("error_threshold crossed: %s failed, more than the %d allowed (%d of %d mini-batches processed)",
			plural(c.FailedItems, "item", "items"), p.ErrorThreshold, c.Processed(), c.Batches)
	case p.AllowedFailedPercent < 100 && c.Batches > 0 && c.Failed*100 > p.AllowedFailedPercent*c.Batches:
		return fmt.Sprintf("allowed_failed_percent crossed: %d of %d mini-batches failed (%.1f%%), more than the %d%% allowed",
			c.Failed, c.Batches, float64(c.Failed)*100/float64(c.Batches), p.AllowedFailedPercent)
	}
	return ""
}

// plural is "1 item" or "3 items".
func plural(n int64, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}
