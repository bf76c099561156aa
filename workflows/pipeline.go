package workflows

import (
	"errors"
	"fmt"
	"time"

	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/porch-pipelines/porch/compiler/plan"
)

// maxRunningSteps caps the steps of one DAG running at once, well under
// Temporal's limit of 2,000 pending children per workflow. DAGs since
// windowChange cap them at runningWindow: every start and end of a step
// updates the DAG's own workflow, one update at a time, and the server's
// task workers queue on that workflow's lock; with 500 trivial steps in
// flight a fan-out of 1,000 ran at 9.4 steps/s on the embedded server,
// with 200 at 42 and with 100 at 56.
const (
	maxRunningSteps = 500
	runningWindow   = 200
)

// windowChange is the GetVersion id of DAGs that run at most runningWindow
// steps at once. A DAG asks it the first time that many run, so the
// history of a smaller run has no marker.
const windowChange = "porch-dag-window"

// StepFailedType is the application error type a run fails with when a step
// fails. Its details are one StepFailure; its cause is the step's error.
const StepFailedType = "StepFailed"

// StepFailure names the step a run failed on.
type StepFailure struct {
	Step string `json:"step"`
}

// Pipeline is the DAG workflow: it runs the steps of one pipeline, each as a
// child workflow started the moment its dependencies succeed. A run whose
// input names a stored plan loads it first, and continues as new before
// its history nears Temporal's limits (continued.go).
func Pipeline(ctx workflow.Context, in PipelineInput) (PipelineResult, error) {
	if in.PlanVersion != plan.Version {
		return PipelineResult{}, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("plan format version %d is not supported (this worker runs version %d): recompile the pipeline with a matching porch", in.PlanVersion, plan.Version),
			"UnsupportedPlan", nil)
	}
	byRef := in.Plan != nil && workflow.GetVersion(ctx, dagChange, workflow.DefaultVersion, 1) == 1
	if byRef {
		if err := loadPipeline(ctx, &in); err != nil {
			return PipelineResult{}, err
		}
	}
	if err := adoptRun(ctx, &in); err != nil {
		return PipelineResult{}, err
	}
	fillScheduled(ctx, &in)
	d := newDAG(in)
	d.started = workflow.GetInfo(ctx).WorkflowStartTime
	r := newDAGRun(ctx, d)
	r.continues, r.budget = byRef, dagEventBudget
	if in.ContinueAfter > 0 {
		r.budget = in.ContinueAfter
	}
	if byRef && in.State != nil {
		if err := r.restore(in.State); err != nil {
			return PipelineResult{}, err
		}
	}
	d.countersAtZero(ctx)
	// A query handler, and its argument, add nothing to history: runs
	// recorded before them replay unchanged, and answer them on a worker
	// that has them.
	if err := setQuery(ctx, StepsQuery, d.stepsAnswer); err != nil {
		return PipelineResult{}, err
	}
	if err := setQuery(ctx, GraphQuery, d.graphAnswer); err != nil {
		return PipelineResult{}, err
	}

	for {
		if r.starting() && !r.draining && !r.batching() {
			r.startReady()
		}
		if !r.sel.HasPending() {
			// Once the events at hand are taken: a query reads it.
			workflow.SetCurrentDetails(ctx, d.progress())
		}
		if r.running == 0 {
			break
		}
		r.sel.Select(ctx)
	}
	if r.continuesAsNew() {
		next, err := r.continued()
		if err != nil {
			return PipelineResult{}, err
		}
		return PipelineResult{}, workflow.NewContinueAsNewError(ctx, PipelineName, next)
	}
	d.flushRecords(ctx)
	defer func() { workflow.SetCurrentDetails(ctx, d.progress()) }()
	res, err := r.end()
	d.writeRunRecord(ctx, res, r.firstFailed, err)
	return res, err
}

// loadPipeline reads the pipeline a run's input names: the stored plan's,
// or for a nested pipeline the one of its step.
func loadPipeline(ctx workflow.Context, in *PipelineInput) error {
	p, err := loadPlan(ctx, *in.Plan)
	if err != nil {
		return err
	}
	in.Pipeline = p.Pipeline
	if in.Prefix == "" {
		return nil
	}
	sub, ok := subPipeline(p.Pipeline, in.Prefix)
	if !ok {
		return temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("the run's plan %s has no pipeline step %q", in.Plan.Hash, in.Prefix), "PlanNotLoaded", nil)
	}
	in.Pipeline = sub
	return nil
}

// end settles the steps that never ran and returns how the run ended.
func (r *dagRun) end() (PipelineResult, error) {
	d, now := r.d, workflow.Now(r.ctx)
	if r.ctx.Err() != nil {
		d.cancelWaiting(now)
		return PipelineResult{}, temporal.NewCanceledError()
	}
	if r.firstErr != nil {
		d.skipBlocked(now)
		d.cancelWaiting(now)
		return PipelineResult{}, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("step %q failed", r.firstFailed), StepFailedType, r.firstErr, StepFailure{Step: r.firstFailed})
	}
	return PipelineResult{Outputs: d.pipelineOutputs()}, nil
}

// dagRun is a Pipeline's loop state: the futures it waits for (steps,
// reuse decisions and records) and its first failure.
type dagRun struct {
	ctx, stepCtx workflow.Context
	cancelSteps  workflow.CancelFunc
	sel          workflow.Selector
	d            *dag
	running      int
	firstErr     error
	firstFailed  string
	// stepsCanceled says the run cancelled its running steps itself, so
	// their cancellations are not a Temporal client's.
	stepsCanceled bool
	// statusKnown says whether the server has PorchStatus, once asked
	// (statusAtStart).
	statusKnown *bool
	// continues says the run continues as new when its history is full
	// (continued.go), past budget events; draining that it is full, and
	// starts no more steps.
	continues, draining bool
	budget              int
	// launched counts the steps this execution started, baseSize is its
	// history's size before the first.
	launched, baseSize int
	// windowed says, once asked, whether this DAG caps its running steps
	// at runningWindow (windowChange).
	windowed *bool
	// behaviour is what this DAG decided for its command steps, once
	// asked (stepBehaviour); decidedNone when it does not decide.
	behaviour *StepBehaviour
	// polled is when the DAG last saw a worker poll each queue.
	polled map[string]time.Time
	// batched says, once asked, whether this DAG takes the events at
	// hand before it starts steps (batchChange).
	batched *bool
	// taskLen names the workflow task taskBytes counts for (its history
	// length), taskBytes what the steps started in it carry; paced says,
	// once asked, whether the DAG bounds it (paceChange), and nextTask
	// that it waits for a timer to start more in a later task.
	taskLen, taskBytes int
	paced              *bool
	nextTask           bool
	// deferred are steps decided in a workflow task that had no room left
	// to start them, in the order they were decided; each stays deciding
	// until it starts.
	deferred []*node
}

// taskBudget bounds what the steps a DAG starts in one workflow task carry
// (their inputs, summaries and details): the task's completion carries
// them all, and the server refuses one over 4 MB (GrpcMessageTooLarge),
// which terminated a run that started 200 steps of 18 KB at once.
const taskBudget = 1 << 20

// paceChange is the GetVersion id of DAGs that start no more than
// taskBudget of steps in one workflow task, and wait for a timer to start
// the rest. A DAG asks it the first time a task reaches the budget.
const paceChange = "porch-dag-task-budget"

// taskFull says whether the steps started in this workflow task reached
// taskBudget; the first time, it starts a timer, whose firing begins a
// later task with room again.
func (r *dagRun) taskFull() bool {
	if r.thisTask() < taskBudget {
		return false
	}
	if r.paced == nil {
		v := workflow.GetVersion(r.ctx, paceChange, workflow.DefaultVersion, 1) == 1
		r.paced = &v
	}
	if !*r.paced {
		return false
	}
	if !r.nextTask {
		r.nextTask = true
		r.wait(newTimer(r.ctx, time.Millisecond, "start more steps in the next workflow task"), func(workflow.Future) { r.nextTask = false })
	}
	return true
}

// started counts what a step started in this workflow task carries.
func (r *dagRun) started(in any, opts workflow.ChildWorkflowOptions) {
	size := len(opts.StaticSummary) + len(opts.StaticDetails)
	if p, err := converter.GetDefaultDataConverter().ToPayload(in); err == nil {
		size += len(p.GetData())
	}
	r.taskBytes = r.thisTask() + size
}

// thisTask is what the steps started in the current workflow task carry,
// counting from zero in a new task (its history length differs).
func (r *dagRun) thisTask() int {
	if n := workflow.GetInfo(r.ctx).GetCurrentHistoryLength(); n != r.taskLen {
		r.taskLen, r.taskBytes = n, 0
	}
	return r.taskBytes
}

// stepBehaviourChange is the GetVersion id of DAGs that decide once what
// their command steps do (StepBehaviour) and pass it in their input: a
// step then records no version markers and asks nothing of its own.
const stepBehaviourChange = "porch-step-behaviour"

// hereChange is the GetVersion id of DAGs whose command steps run their
// command first as a local activity of the step's workflow
// (StepBehaviour.Here); asked with stepBehaviourChange, once a run.
const hereChange = "porch-command-here"

// decidedNone is a DAG's behaviour when it does not decide its steps'.
var decidedNone = &StepBehaviour{}

// stepBehaviour is what the DAG decided for command step s; nil in DAGs
// before stepBehaviourChange. It asks the first time a command step starts.
func (r *dagRun) stepBehaviour(s plan.Step) *StepBehaviour {
	if r.behaviour == nil {
		r.behaviour = decidedNone
		if workflow.GetVersion(r.ctx, stepBehaviourChange, workflow.DefaultVersion, 1) == 1 {
			r.behaviour = &StepBehaviour{PorchStatus: r.statusRegistered(),
				Here: workflow.GetVersion(r.ctx, hereChange, workflow.DefaultVersion, 1) == 1}
		}
	}
	if r.behaviour == decidedNone {
		return nil
	}
	b := *r.behaviour
	b.Watch = !r.workerPolls(s)
	return &b
}

// workerPolls says whether a worker polled the queue of command step s in
// the last noWorkerCheck, asking the server (a local activity) at most
// once that long for each queue. A serverless step chooses its queue as
// it starts, so the DAG cannot tell.
func (r *dagRun) workerPolls(s plan.Step) bool {
	res := s.Command.Resources
	if res.Serverless != nil && res.TaskQueue == "" || res.Spot() {
		return false
	}
	queue := res.Queue(s.Compute)
	now := workflow.Now(r.ctx)
	if seen, ok := r.polled[queue]; ok && now.Sub(seen) < noWorkerCheck {
		return true
	}
	if polled, err := hasPollers(r.ctx, queue); err != nil || !polled {
		return false
	}
	if r.polled == nil {
		r.polled = map[string]time.Time{}
	}
	r.polled[queue] = now
	return true
}

// batchChange is the GetVersion id of DAGs that take every event at hand
// (steps ended, decisions made) before they start the steps those made
// ready, rather than look for ready steps after each: with 10,000 steps
// that look (every step, in plan order) was a third of the DAG's work.
// A DAG asks it the first time two events are at hand.
const batchChange = "porch-dag-batched"

// batching says whether the DAG leaves its ready steps until it has
// taken the events at hand.
func (r *dagRun) batching() bool {
	if !r.sel.HasPending() {
		return false
	}
	if r.batched == nil {
		v := workflow.GetVersion(r.ctx, batchChange, workflow.DefaultVersion, 1) == 1
		r.batched = &v
	}
	return *r.batched
}

// room says whether the run may start one more step.
func (r *dagRun) room() bool {
	if r.running < runningWindow {
		return true
	}
	if r.windowed == nil {
		v := workflow.GetVersion(r.ctx, windowChange, workflow.DefaultVersion, 1) == 1
		r.windowed = &v
	}
	return !*r.windowed && r.running < maxRunningSteps
}

func newDAGRun(ctx workflow.Context, d *dag) *dagRun {
	stepCtx, cancelSteps := workflow.WithCancel(ctx)
	return &dagRun{ctx: ctx, stepCtx: stepCtx, cancelSteps: cancelSteps, sel: workflow.NewSelector(ctx), d: d}
}

// starting says whether the run still starts steps.
func (r *dagRun) starting() bool {
	return r.ctx.Err() == nil && (r.firstErr == nil || r.d.in.Settings.ContinueOnStepFailure)
}

// startReady starts what can start: steps an earlier execution finished
// are taken, and each ready step is decided for reuse, then run.
func (r *dagRun) startReady() {
	d := r.d
	d.skipBlocked(workflow.Now(r.ctx))
	for reused := d.reuse(workflow.Now(r.ctx)); len(reused) > 0; reused = d.reuse(workflow.Now(r.ctx)) {
		// Steps an earlier execution finished free their dependants.
		for _, n := range reused {
			d.countReused(r.ctx, n)
		}
	}
	for len(r.deferred) > 0 && r.room() && !r.taskFull() {
		s := r.deferred[0]
		r.deferred = r.deferred[1:]
		s.deciding = false
		r.launch(s)
	}
	for _, s := range d.ready() {
		if !r.room() || r.taskFull() {
			break
		}
		if r.full() {
			r.draining = true
			break
		}
		if !d.decides(r.ctx, s) {
			r.launch(s)
			continue
		}
		s.deciding = true
		in := d.decideInput(s)
		if !d.decidesHere(r.ctx) {
			r.wait(d.decideReuse(r.stepCtx, s, in), func(f workflow.Future) { r.decided(s, f) })
			continue
		}
		r.wait(d.decideHere(r.stepCtx, s, in), func(f workflow.Future) {
			err := f.Get(r.ctx, nil)
			if err == nil || isCanceled(err) {
				r.decided(s, f)
				return
			}
			// This worker declined, failed or ran out of time: a worker
			// of the default queue decides, heartbeating.
			workflow.GetLogger(r.ctx).Debug("porch: reuse decided elsewhere", "step", s.step.Path, "error", err)
			r.wait(d.decideReuse(r.stepCtx, s, in), func(f workflow.Future) { r.decided(s, f) })
		})
	}
}

// decided takes a step's reuse decision: a reused step is done (its
// ReusedStep workflow starts), any other runs.
func (r *dagRun) decided(s *node, f workflow.Future) {
	d := r.d
	s.deciding = false
	d.settle(r.ctx, f, s)
	if s.state.Status == StatusReused {
		d.countReused(r.ctx, s)
		r.reused(s)
	}
	if s.state.Status == StatusWaiting && r.starting() {
		r.launch(s)
	}
}

// wait adds a future the loop waits for.
func (r *dagRun) wait(f workflow.Future, done func(workflow.Future)) {
	r.running++
	r.sel.AddFuture(f, func(f workflow.Future) {
		r.running--
		done(f)
	})
}

// launch starts a step's workflow; when it succeeds, its record for reuse
// is kept for the next decision to write.
func (r *dagRun) launch(s *node) {
	ctx, d := r.ctx, r.d
	if r.taskFull() {
		// Decided in a task with no room left: it starts in a later one.
		s.deciding = true
		r.deferred = append(r.deferred, s)
		return
	}
	d.start(s, workflow.Now(ctx))
	d.countStarted(ctx, s)
	r.launched++
	r.wait(r.startStep(s), func(f workflow.Future) {
		if !childIDTaken(ctx, f) {
			r.stepEnded(s, f)
			return
		}
		// An earlier execution of this run (before a reset) left the
		// step running: it ends, and the step starts again, once.
		r.wait(endEarlierChild(ctx, d.in.RunID+"/"+s.step.Path), func(freed workflow.Future) {
			if !idFreed(ctx, freed) || !r.starting() {
				r.stepEnded(s, f)
				return
			}
			r.wait(r.startStep(s), func(f workflow.Future) { r.stepEnded(s, f) })
		})
	})
}

// stepEnded takes a step's end: its outputs or failure, its record for
// reuse, and the run's first failure.
func (r *dagRun) stepEnded(s *node, f workflow.Future) {
	ctx, d := r.ctx, r.d
	err := d.finish(ctx, f, s)
	if err != nil && ctx.Err() == nil && endedOutside(err, r.stepsCanceled) &&
		workflow.GetVersion(ctx, outsideChange, workflow.DefaultVersion, 1) == 1 {
		err = d.outsideEnd(ctx, s, err)
	}
	d.countEnded(ctx, s)
	if err == nil {
		d.succeeded(ctx, s)
	}
	if err != nil && r.firstErr == nil && !isCanceled(err) {
		r.firstErr, r.firstFailed = err, s.step.Path
		if !d.in.Settings.ContinueOnStepFailure {
			r.stepsCanceled = true
			r.cancelSteps()
		}
	}
}

func isCanceled(err error) bool {
	var ce *temporal.CanceledError
	return errors.As(err, &ce)
}

// startStep starts a step's child workflow and returns its result future.
func (r *dagRun) startStep(s *node) workflow.Future {
	ctx, d := r.stepCtx, r.d
	opts := workflow.ChildWorkflowOptions{
		WorkflowID:            d.in.RunID + "/" + s.step.Path,
		TaskQueue:             plan.DefaultTaskQueue,
		WaitForCancellation:   true,
		TypedSearchAttributes: d.stepAttributes(s.step),
		StaticSummary:         stepSummary(s.step),
		StaticDetails: cut(reuseDetails(d.in.RunID, s)+
			stepDetails(d.in.RunID, d.in.Settings.DefaultDatastore, s.step, d.resolveInputs(s.step.Inputs), s.outputs), maxDetails),
	}
	ctx = workflow.WithChildOptions(ctx, opts)
	name, in := CommandStepName, any(nil)
	switch s.step.Type {
	case plan.StepPipeline:
		name, in = PipelineName, d.childPipelineInput(s)
	case plan.StepParallel:
		name, in = ParallelStepName, d.parallelInput(s)
	case plan.StepSweep:
		name, in = SweepStepName, d.sweepInput(s)
	default:
		c := d.commandInput(s)
		c.Behaviour = r.stepBehaviour(s.step)
		in = c
	}
	r.started(in, opts)
	return workflow.ExecuteChildWorkflow(ctx, name, in)
}
