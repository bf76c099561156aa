package workflows

import (
	"errors"
	"fmt"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/porch-pipelines/porch/compiler/plan"
)

// maxRunningSteps caps the steps of one DAG running at once, well under
// Temporal's limit of 2,000 pending children per workflow.
const maxRunningSteps = 500

// StepFailedType is the application error type a run fails with when a step
// fails. Its details are one StepFailure; its cause is the step's error.
const StepFailedType = "StepFailed"

// StepFailure names the step a run failed on.
type StepFailure struct {
	Step string `json:"step"`
}

// Pipeline is the DAG workflow: it runs the steps of one pipeline, each as a
// child workflow started the moment its dependencies succeed.
func Pipeline(ctx workflow.Context, in PipelineInput) (PipelineResult, error) {
	if in.PlanVersion != plan.Version {
		return PipelineResult{}, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("plan format version %d is not supported (this worker runs version %d): recompile the pipeline with a matching porch", in.PlanVersion, plan.Version),
			"UnsupportedPlan", nil)
	}
	if err := adoptRun(ctx, &in); err != nil {
		return PipelineResult{}, err
	}
	d := newDAG(in)
	if err := setQuery(ctx, StepsQuery, func() ([]StepState, error) {
		return d.states(), nil
	}); err != nil {
		return PipelineResult{}, err
	}

	stepCtx, cancelSteps := workflow.WithCancel(ctx)
	sel := workflow.NewSelector(ctx)
	running := 0
	var firstErr error
	var firstFailed string
	// stepsCanceled says the run cancelled its running steps itself, so
	// their cancellations are not a Temporal client's.
	stepsCanceled := false
	starting := func() bool { return ctx.Err() == nil && (firstErr == nil || in.Settings.ContinueOnStepFailure) }
	// wait adds a future the loop waits for.
	wait := func(f workflow.Future, done func(workflow.Future)) {
		running++
		sel.AddFuture(f, func(f workflow.Future) {
			running--
			done(f)
		})
	}
	launch := func(s *node) {
		d.start(s, workflow.Now(ctx))
		wait(startStep(stepCtx, d, s), func(f workflow.Future) {
			err := d.finish(ctx, f, s)
			if err != nil && ctx.Err() == nil && endedOutside(err, stepsCanceled) &&
				workflow.GetVersion(ctx, outsideChange, workflow.DefaultVersion, 1) == 1 {
				err = d.outsideEnd(ctx, s, err)
			}
			if err == nil {
				if rf := d.recordReuse(ctx, s); rf != nil {
					wait(rf, func(f workflow.Future) { warnNotRecorded(ctx, f, s) })
				}
			}
			if err != nil && firstErr == nil && !isCanceled(err) {
				firstErr, firstFailed = err, s.step.Path
				if !in.Settings.ContinueOnStepFailure {
					stepsCanceled = true
					cancelSteps()
				}
			}
		})
	}
	for {
		if starting() {
			d.skipBlocked(workflow.Now(ctx))
			for d.reuse(workflow.Now(ctx)) {
				// Steps an earlier execution finished free their dependants.
			}
			for _, s := range d.ready() {
				if running >= maxRunningSteps {
					break
				}
				if !d.decides(ctx, s) {
					launch(s)
					continue
				}
				s.deciding = true
				wait(d.decideReuse(stepCtx, s), func(f workflow.Future) {
					s.deciding = false
					d.settle(ctx, f, s)
					if s.state.Status == StatusWaiting && starting() {
						launch(s)
					}
				})
			}
		}
		workflow.SetCurrentDetails(ctx, d.progress())
		if running == 0 {
			break
		}
		sel.Select(ctx)
	}
	now := workflow.Now(ctx)
	defer func() { workflow.SetCurrentDetails(ctx, d.progress()) }()
	if ctx.Err() != nil {
		d.cancelWaiting(now)
		return PipelineResult{}, temporal.NewCanceledError()
	}
	if firstErr != nil {
		d.skipBlocked(now)
		d.cancelWaiting(now)
		return PipelineResult{}, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("step %q failed", firstFailed), StepFailedType, firstErr, StepFailure{Step: firstFailed})
	}
	return PipelineResult{Outputs: d.pipelineOutputs()}, nil
}

func isCanceled(err error) bool {
	var ce *temporal.CanceledError
	return errors.As(err, &ce)
}

// startStep starts a step's child workflow and returns its result future.
func startStep(ctx workflow.Context, d *dag, s *node) workflow.Future {
	opts := workflow.ChildWorkflowOptions{
		WorkflowID:            d.in.RunID + "/" + s.step.Path,
		TaskQueue:             plan.DefaultTaskQueue,
		WaitForCancellation:   true,
		TypedSearchAttributes: d.stepAttributes(s.step),
		StaticSummary:         stepSummary(s.step),
		StaticDetails:         stepDetails(d.in.RunID, d.in.Settings.DefaultDatastore, s.step, d.resolveInputs(s.step.Inputs), s.outputs),
	}
	ctx = workflow.WithChildOptions(ctx, opts)
	switch s.step.Type {
	case plan.StepPipeline:
		return workflow.ExecuteChildWorkflow(ctx, PipelineName, d.childPipelineInput(s))
	case plan.StepParallel:
		return workflow.ExecuteChildWorkflow(ctx, ParallelStepName, d.parallelInput(s))
	case plan.StepSweep:
		return workflow.ExecuteChildWorkflow(ctx, SweepStepName, d.sweepInput(s))
	default:
		return workflow.ExecuteChildWorkflow(ctx, CommandStepName, d.commandInput(s))
	}
}
