package workflows

import (
	"hash/fnv"
	"strconv"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/porch-pipelines/porch/activities/stepio"
	sweepacts "github.com/porch-pipelines/porch/activities/sweep"
	"github.com/porch-pipelines/porch/compiler/plan"
	"github.com/porch-pipelines/porch/sweep"
)

// Sweep step settings.
const (
	// minPoll and maxPoll bound how often the running trials' metrics are
	// read and early termination evaluated, when the sweep has a policy
	// (without one, a trial's metrics are read when it ends). The interval
	// grows with the sweep's age, a twentieth of it, so a sweep of long
	// trials spends a bounded number of history events on polls (about 8
	// a poll: some 1,000 an hour at 30 s).
	minPoll = time.Second
	maxPoll = 30 * time.Second
	// maxRunningTrials caps the trials running at once, under Temporal's
	// limit of 2,000 pending children.
	maxRunningTrials = 500
	// SweepFailedType is the error type of a sweep none of whose trials
	// completed with the primary metric.
	SweepFailedType = "SweepFailed"
)

// SweepStep is the workflow of one sweep step: it samples trials (a local
// activity, so replay never samples again), runs each as a child workflow
// (a command, or a whole pipeline) with at most max_concurrent_trials at
// once, follows their primary metric while they run, stops the trials the
// early-termination policy picks, and reports its best trial's outputs.
func SweepStep(ctx workflow.Context, in SweepStepInput) (_ SweepStepResult, err error) {
	defer func(ctx workflow.Context) { err = headline(ctx, in.Step.Path, err) }(ctx)
	s := &sweepRun{in: in, sw: *in.Step.Sweep, cancels: map[int]workflow.CancelFunc{}, stopped: map[int]bool{}, fresh: map[int]int{}}
	if err := setQuery(ctx, TrialsQuery, func() (SweepProgress, error) {
		return s.progress(), nil
	}); err != nil {
		return SweepStepResult{}, err
	}
	s.st = in.State
	if s.st == nil {
		s.st = &SweepState{Seed: s.seed(ctx), Started: workflow.Now(ctx)}
	}
	cont, err := s.run(ctx)
	if err != nil {
		return SweepStepResult{}, err
	}
	if cont {
		next := in
		next.State = s.st
		return SweepStepResult{}, workflow.NewContinueAsNewError(ctx, SweepStepName, next)
	}
	return s.finish(ctx)
}

// sweepTimersChange is the GetVersion id of a sweep run cancelling its
// timeout and metrics-poll timers when it ends (version 1).
const sweepTimersChange = "sweep-timers"

// sweepRun is one run (between continue-as-new) of a sweep step.
type sweepRun struct {
	in      SweepStepInput
	sw      plan.Sweep
	st      *SweepState
	running int
	// cancels stop running trials; stopped marks those early termination
	// stopped. Both are looked up by trial, never ranged over.
	cancels map[int]workflow.CancelFunc
	stopped map[int]bool
	// fresh counts each trial's reports read since the policy last ran.
	fresh    map[int]int
	timedOut bool
}

// progress is the sweep as the trials query reports it.
func (s *sweepRun) progress() SweepProgress {
	return SweepProgress{Metric: s.sw.Objective.PrimaryMetric, Goal: s.sw.Objective.Goal,
		MaxTrials: s.sw.Limits.MaxTotalTrials, Trials: s.st.Trials}
}

// show sets the sweep's current details to its progress: "8/20 trials:
// 7 completed, 1 running; best trial 2: accuracy 0.913".
func (s *sweepRun) show(ctx workflow.Context) {
	workflow.SetCurrentDetails(ctx, s.progress().Summary())
}

// seed is sampling_algorithm's seed, or one derived from this execution's
// run id (random, and in the history).
func (s *sweepRun) seed(ctx workflow.Context) int64 {
	if s.sw.Sampling.Seed != nil {
		return *s.sw.Sampling.Seed
	}
	h := fnv.New64a()
	h.Write([]byte(workflow.GetInfo(ctx).WorkflowExecution.RunID))
	return int64(h.Sum64() >> 1)
}

// run starts and follows trials until none is left to run. It says whether
// the sweep should continue as new.
func (s *sweepRun) run(ctx workflow.Context) (bool, error) {
	trialCtx, cancelTrials := workflow.WithCancel(ctx)
	sel := workflow.NewSelector(ctx)
	// From version 1 of sweepTimersChange the timers are cancelled when
	// the run ends, so a closed sweep has no timer pending.
	timerCtx := ctx
	if workflow.GetVersion(ctx, sweepTimersChange, workflow.DefaultVersion, 1) == 1 {
		var stopTimers workflow.CancelFunc
		timerCtx, stopTimers = workflow.WithCancel(ctx)
		defer stopTimers()
	}
	deadline := s.st.Started.Add(time.Duration(s.sw.Limits.TimeoutSeconds) * time.Second)
	if left := deadline.Sub(workflow.Now(ctx)); left > 0 {
		sel.AddFuture(newTimer(timerCtx, left, "sweep timeout (limits.timeout)"), func(workflow.Future) {
			s.timedOut = true
			cancelTrials()
		})
	} else {
		s.timedOut = true
	}
	polling := false
	draining := false
	for {
		if !s.timedOut && !draining && ctx.Err() == nil {
			if err := s.startTrials(ctx, trialCtx, sel); err != nil {
				cancelTrials()
				return false, err
			}
		}
		s.show(ctx)
		if s.running == 0 {
			break
		}
		if !polling && s.sw.EarlyTermination != nil {
			polling = true
			sel.AddFuture(newTimer(timerCtx, s.pollInterval(ctx), "metrics poll"), func(workflow.Future) {
				polling = false
				s.poll(ctx, s.runningTrials())
				s.terminateEarly(ctx)
			})
		}
		sel.Select(ctx)
		if ctx.Err() != nil {
			cancelTrials()
		}
		draining = draining || workflow.GetInfo(ctx).GetContinueAsNewSuggested()
	}
	if ctx.Err() != nil {
		return false, temporal.NewCanceledError()
	}
	more := !s.st.Exhausted && len(s.st.Trials) < s.sw.Limits.MaxTotalTrials
	return draining && more && !s.timedOut, nil
}

// pollInterval is how long until the next metrics poll.
func (s *sweepRun) pollInterval(ctx workflow.Context) time.Duration {
	age := workflow.Now(ctx).Sub(s.st.Started)
	return min(max(age/20, minPoll), maxPoll).Round(time.Second)
}

// startTrials samples and starts trials while there is room.
func (s *sweepRun) startTrials(ctx, trialCtx workflow.Context, sel workflow.Selector) error {
	limit := min(s.sw.Limits.MaxConcurrentTrials, maxRunningTrials)
	free := min(limit-s.running, s.sw.Limits.MaxTotalTrials-len(s.st.Trials))
	if free <= 0 || s.st.Exhausted {
		return nil
	}
	lctx := workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{
		StartToCloseTimeout: time.Minute,
		RetryPolicy:         &temporal.RetryPolicy{MaximumAttempts: 3, NonRetryableErrorTypes: []string{stepio.InvalidStepType}},
		Summary:             "sample " + plural(int64(free), "trial", "trials"),
	})
	in := sweepacts.SampleTrialsInput{
		Space: s.sw.SearchSpace, Sampling: s.sw.Sampling, Goal: s.sw.Objective.Goal,
		Seed: s.st.Seed, Started: len(s.st.Trials), N: free, Observed: s.observed(),
	}
	var out sweepacts.SampledTrials
	if err := workflow.ExecuteLocalActivity(lctx, sweepacts.SampleTrialsName, in).Get(ctx, &out); err != nil {
		return err
	}
	s.st.Exhausted = out.Exhausted
	for _, a := range out.Assignments {
		s.startTrial(ctx, trialCtx, sel, a)
	}
	return nil
}

// observed are the completed trials with their final metric, for bayesian
// sampling.
func (s *sweepRun) observed() []sweep.Observation {
	if s.sw.Sampling.Algorithm != plan.SamplingBayesian {
		return nil
	}
	var out []sweep.Observation
	for _, t := range s.st.Trials {
		if t.Status == TrialCompleted && len(t.Points) > 0 {
			out = append(out, sweep.Observation{Params: t.Params, Metric: t.Points[len(t.Points)-1].Value})
		}
	}
	return out
}

// trialPath is trial n's step path.
func (s *sweepRun) trialPath(n int) string { return s.in.Step.Path + "/trial-" + strconv.Itoa(n) }

// startTrial starts one trial's child workflow.
func (s *sweepRun) startTrial(ctx, trialCtx workflow.Context, sel workflow.Selector, a sweep.Assignment) {
	n := len(s.st.Trials)
	path := s.trialPath(n)
	t := TrialState{Trial: n, WorkflowID: s.in.RunID + "/" + path, Params: a, Status: TrialRunning, Started: workflow.Now(ctx)}
	s.st.Trials = append(s.st.Trials, t)
	cctx, cancel := workflow.WithCancel(trialCtx)
	s.cancels[n] = cancel
	typ, input := s.trialInput(path, a)
	opts := workflow.ChildWorkflowOptions{
		WorkflowID:          t.WorkflowID,
		TaskQueue:           plan.DefaultTaskQueue,
		WaitForCancellation: true,
		TypedSearchAttributes: stepAttributes(runKeys{s.in.RunID, s.in.Name, s.in.Experiment, s.in.Settings.SubmittedBy}, path,
			trialType(s.in.Step), s.in.Step.Compute),
		StaticSummary: trialSummary(n, a),
		StaticDetails: s.trialDetails(path, input),
	}
	if sec := s.sw.Limits.TrialTimeoutSeconds; sec > 0 && s.in.Step.Pipeline != nil {
		opts.WorkflowRunTimeout = time.Duration(sec) * time.Second
	}
	s.running++
	cctx = workflow.WithChildOptions(cctx, opts)
	ended := func(f workflow.Future) {
		s.running--
		s.trialEnded(ctx, n, f)
	}
	sel.AddFuture(workflow.ExecuteChildWorkflow(cctx, typ, input), func(f workflow.Future) {
		if !childIDTaken(ctx, f) {
			ended(f)
			return
		}
		// An earlier execution of this sweep (before a reset) left the
		// trial running: it ends, and the trial starts again, once.
		sel.AddFuture(endEarlierChild(ctx, t.WorkflowID), func(freed workflow.Future) {
			if !idFreed(ctx, freed) || cctx.Err() != nil {
				ended(f)
				return
			}
			sel.AddFuture(workflow.ExecuteChildWorkflow(cctx, typ, input), ended)
		})
	})
}

func trialType(step plan.Step) plan.StepType {
	if step.Pipeline != nil {
		return plan.StepPipeline
	}
	return plan.StepCommand
}
