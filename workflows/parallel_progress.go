package workflows

import (
	"slices"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/porch-pipelines/porch/activities/parallel"
	"github.com/porch-pipelines/porch/activities/stepio"
	"github.com/porch-pipelines/porch/compiler/plan"
)

// sawNode starts the resource monitor on a node the step uses for the
// first time in this run.
func (r *parallelRun) sawNode(ctx workflow.Context, node string) {
	if node == "" {
		return
	}
	known := false
	for _, n := range r.st.Nodes {
		known = known || n == node
	}
	if !known {
		r.st.Nodes = append(r.st.Nodes, node)
	}
	r.startMonitor(ctx, node)
}

// startMonitor runs MonitorResources on the node's own queue. It is never
// waited for: the step's end cancels it, and a node that dies takes its
// monitor with it.
func (r *parallelRun) startMonitor(ctx workflow.Context, node string) {
	interval := r.in.Plan.Parallel.ResourceMonitorIntervalSeconds
	if interval <= 0 || r.monitors[node] {
		return
	}
	if r.monitors == nil {
		r.monitors = map[string]bool{}
	}
	r.monitors[node] = true
	mctx, cancel := workflow.WithCancel(ctx)
	r.stopMonitors = append(r.stopMonitors, cancel)
	mctx = workflow.WithActivityOptions(mctx, workflow.ActivityOptions{
		Summary:             "monitor node " + node,
		TaskQueue:           plan.NodeTaskQueue(node),
		StartToCloseTimeout: noTimeout,
		HeartbeatTimeout:    time.Minute,
		RetryPolicy:         &temporal.RetryPolicy{MaximumAttempts: 1},
		WaitForCancellation: r.monitorsEnd(ctx),
	})
	f := workflow.ExecuteActivity(mctx, parallel.MonitorResourcesName,
		parallel.MonitorInput{Ref: r.st.Plan.Ref, Node: node, IntervalSeconds: interval})
	r.monitorEnds = append(r.monitorEnds, nodeFuture{node: node, f: f})
}

// show sets the step's current details to its progress: "312/400
// mini-batches, 2 failed, 8 running".
func (r *parallelRun) show(ctx workflow.Context) {
	p := r.snapshot()
	s := p.Summary()
	if p.Phase == PhaseDone && p.Reason != "" {
		s = "failed: " + oneLine(p.Reason, maxSummary) + " (" + s + ")"
	}
	workflow.SetCurrentDetails(ctx, s)
}

// reportProgress adds a line to the progress overview now and then.
func (r *parallelRun) reportProgress(ctx workflow.Context) {
	now := workflow.Now(ctx)
	if now.Sub(r.st.LastReport) < progressEvery {
		return
	}
	r.st.LastReport = now
	actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		Summary:             "progress overview: " + r.snapshot().Summary(),
		TaskQueue:           r.bookkeepingQueue(),
		StartToCloseTimeout: time.Minute,
		RetryPolicy:         &temporal.RetryPolicy{MaximumAttempts: 1},
	})
	workflow.ExecuteActivity(actx, parallel.ReportParallelProgressName, r.progressInput(now))
}

func (r *parallelRun) progressInput(now time.Time) parallel.ProgressInput {
	return parallel.ProgressInput{Ref: r.st.Plan.Ref, Started: r.st.Started, At: now, Counters: r.st.Counters}
}

// finish runs FinishParallel (even when the step was cancelled, so the
// entry-script processes stop and the logs say how it ended) and returns
// the step's result.
func (r *parallelRun) finish(ctx workflow.Context, outcome batchOutcome) (ParallelStepResult, error) {
	r.progress.Phase = PhaseFinishing
	r.show(ctx)
	for _, stop := range r.stopMonitors {
		stop()
	}
	fctx := ctx
	if ctx.Err() != nil {
		fctx, _ = workflow.NewDisconnectedContext(ctx)
	}
	fctx = workflow.WithActivityOptions(fctx, workflow.ActivityOptions{
		Summary:             "finish",
		TaskQueue:           r.queue(),
		StartToCloseTimeout: planTimeout,
		HeartbeatTimeout:    r.finishHeartbeat(ctx),
		RetryPolicy: &temporal.RetryPolicy{
			MaximumAttempts:        infraAttempts,
			NonRetryableErrorTypes: []string{stepio.InvalidStepType},
		},
	})
	in := parallel.FinishParallelInput{
		Progress:   r.progressInput(workflow.Now(ctx)),
		Succeeded:  outcome.err == nil,
		ParentPath: r.in.ParentPath,
	}
	if outcome.err != nil {
		in.Reason = ErrorMessage(outcome.err)
	}
	var res parallel.FinishParallelResult
	ferr := workflow.ExecuteActivity(fctx, parallel.FinishParallelName, in).Get(fctx, &res)
	// The monitors stopped while FinishParallel ran, and so did the
	// instances the step held; one on a lost node never says so.
	r.awaitMonitors(ctx)
	r.awaitHolds(ctx)
	r.progress.Phase = PhaseDone
	defer r.show(ctx)
	if outcome.err != nil {
		r.progress.Reason = in.Reason
		return ParallelStepResult{}, outcome.err
	}
	if ferr != nil {
		return ParallelStepResult{}, ferr
	}
	return ParallelStepResult{LogDir: res.LogDir, Outputs: res.Outputs, Counters: r.st.Counters}, nil
}

// monitorsChange is the GetVersion id of a parallel step's end waiting
// for its resource monitors: version 1 waits (up to monitorGrace) for the
// cancelled monitors to stop, so a closed step has no activity pending.
const monitorsChange = "parallel-monitors-end"

// monitorGrace bounds the wait for the monitors to stop after
// FinishParallel: a live one stops within a heartbeat (a second), one on
// a lost node never answers.
const monitorGrace = 3 * time.Second

// monitorsEnd says whether this run waits for its monitors to stop.
func (r *parallelRun) monitorsEnd(ctx workflow.Context) bool {
	if r.monitorsVersion == nil {
		v := workflow.GetVersion(ctx, monitorsChange, workflow.DefaultVersion, 1) == 1
		r.monitorsVersion = &v
	}
	return *r.monitorsVersion
}

// nodeFuture is an activity's future on one node.
type nodeFuture struct {
	node string
	f    workflow.Future
}

// awaitMonitors waits for the cancelled monitors of the nodes not known
// lost to stop, at most monitorGrace, from version 1 of monitorsChange on.
func (r *parallelRun) awaitMonitors(ctx workflow.Context) {
	if len(r.monitorEnds) == 0 || !r.monitorsEnd(ctx) {
		return
	}
	var live []workflow.Future
	for _, m := range r.monitorEnds {
		if !slices.Contains(r.lostNodes, m.node) {
			live = append(live, m.f)
		}
	}
	awaitStopped(ctx, live, "resource monitors stop")
}

// awaitStopped waits for the futures of cancelled activities that wait
// for their cancellation, at most monitorGrace (a timer labelled what).
func awaitStopped(ctx workflow.Context, fs []workflow.Future, what string) {
	if len(fs) == 0 {
		return
	}
	wctx, _ := workflow.NewDisconnectedContext(ctx)
	sel := workflow.NewSelector(wctx)
	for _, f := range fs {
		sel.AddFuture(f, func(workflow.Future) {})
	}
	timerCtx, stopTimer := workflow.WithCancel(wctx)
	defer stopTimer()
	late := false
	sel.AddFuture(newTimer(timerCtx, monitorGrace, what), func(workflow.Future) { late = true })
	for range fs {
		if sel.Select(wctx); late {
			return
		}
	}
}
