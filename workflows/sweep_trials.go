package workflows

import (
	"fmt"
	"strings"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/porch-pipelines/porch/activities/command"
	"github.com/porch-pipelines/porch/activities/stepio"
	sweepacts "github.com/porch-pipelines/porch/activities/sweep"
	"github.com/porch-pipelines/porch/compiler/plan"
	"github.com/porch-pipelines/porch/sweep"
)

// trialInputs binds the step's inputs for one trial: search-space inputs
// take the sampled values, the rest are as the sweep step got them.
func (s *sweepRun) trialInputs(a sweep.Assignment) []plan.Input {
	out := make([]plan.Input, 0, len(s.in.Step.Inputs))
	for _, inp := range s.in.Step.Inputs {
		if inp.Value.Kind == plan.ValueSearchSpace {
			name := inp.Value.Input
			if name == "" {
				name = inp.Name
			}
			inp.Value = plan.Value{Kind: plan.ValueNone}
			for _, v := range a {
				if v.Name == name {
					inp.Value = plan.Value{Kind: plan.ValueLiteral, Literal: v.Text}
				}
			}
		}
		out = append(out, inp)
	}
	return out
}

// trialInput is the child workflow a trial runs and its input.
func (s *sweepRun) trialInput(path string, a sweep.Assignment) (string, any) {
	step := s.in.Step
	inputs := s.trialInputs(a)
	ds := s.in.Settings.DefaultDatastore
	if step.Pipeline != nil {
		bound := map[string]plan.Input{}
		for _, i := range inputs {
			bound[i.Name] = i
		}
		var decls []plan.Input
		for _, d := range step.Pipeline.Inputs {
			if b, ok := bound[d.Name]; ok {
				d.Value = b.Value
			}
			decls = append(decls, d)
		}
		return PipelineName, PipelineInput{
			PlanVersion: s.in.PlanVersion, RunID: s.in.RunID, Name: s.in.Name, Experiment: s.in.Experiment,
			Settings: s.in.Settings, Prefix: path, Pipeline: reprefix(*step.Pipeline, step.Path, path), Inputs: decls,
		}
	}
	cmd := *step.Command
	if sec := s.sw.Limits.TrialTimeoutSeconds; sec > 0 && (cmd.TimeoutSeconds == 0 || sec < cmd.TimeoutSeconds) {
		cmd.TimeoutSeconds = sec
	}
	outputs := make([]plan.Output, 0, len(step.Outputs))
	for _, o := range step.Outputs {
		o.Path = plan.DefaultOutputURI(ds, s.in.RunID, path, o.Name)
		if o.Type == "uri_file" {
			o.Path = strings.TrimSuffix(o.Path, "/")
		}
		o.Parent = ""
		outputs = append(outputs, o)
	}
	return CommandStepName, CommandStepInput{
		Compute: step.Compute,
		Quota:   quotaRequest(step.Compute, cmd.Resources),
		Run: command.RunCommandInput{Step: stepio.Step{
			RunID: s.in.RunID, StepPath: path, DefaultDatastore: ds,
			Command: cmd, Inputs: inputs, Outputs: outputs, SubmittedBy: s.in.Settings.SubmittedBy,
		}},
	}
}

// trialDetails is a trial workflow's static details: the trial step as
// the trial runs it, with its inputs bound to its parameters.
func (s *sweepRun) trialDetails(path string, input any) string {
	st := s.in.Step
	st.Path, st.Type, st.Sweep = path, trialType(s.in.Step), nil
	var inputs []plan.Input
	var outputs []plan.Output
	switch in := input.(type) {
	case CommandStepInput:
		inputs, outputs = in.Run.Inputs, in.Run.Outputs
	case PipelineInput:
		inputs, st.Pipeline = in.Inputs, &in.Pipeline
	}
	return stepDetails(s.in.RunID, s.in.Settings.DefaultDatastore, st, inputs, outputs)
}

// reprefix moves a pipeline's steps from under the sweep step's path to
// under a trial's: the compiler gives a pipeline trial's steps paths under
// the sweep step, and each trial needs its own workflow ids and folders.
func reprefix(pl plan.Pipeline, from, to string) plan.Pipeline {
	steps := make([]plan.Step, len(pl.Steps))
	for i, st := range pl.Steps {
		if rest, ok := strings.CutPrefix(st.Path, from+"/"); ok {
			st.Path = to + "/" + rest
		}
		if st.Pipeline != nil {
			sub := reprefix(*st.Pipeline, from, to)
			st.Pipeline = &sub
		}
		steps[i] = st
	}
	pl.Steps = steps
	return pl
}

// metricSteps are the steps of trial n whose metrics files hold the
// primary metric: the trial itself, or in a pipeline trial metric_step (or
// else every top-level step).
func (s *sweepRun) metricSteps(n int) []string {
	path := s.trialPath(n)
	if s.in.Step.Pipeline == nil {
		return []string{path}
	}
	if s.sw.MetricStep != "" {
		return []string{path + "/" + s.sw.MetricStep}
	}
	var out []string
	for _, st := range s.in.Step.Pipeline.Steps {
		out = append(out, path+"/"+st.Name)
	}
	return out
}

// trialEnded records how a trial ended, after reading its last metrics.
func (s *sweepRun) trialEnded(ctx workflow.Context, n int, f workflow.Future) {
	var outputs []OutputLocation
	var err error
	if s.in.Step.Pipeline != nil {
		var r PipelineResult
		err = f.Get(ctx, &r)
		outputs = r.Outputs
	} else {
		var r command.RunCommandResult
		err = f.Get(ctx, &r)
		for _, o := range r.Outputs {
			outputs = append(outputs, OutputLocation{Name: o.Name, URI: o.URI})
		}
	}
	dctx, _ := workflow.NewDisconnectedContext(ctx)
	s.poll(dctx, []int{n})
	t := &s.st.Trials[n]
	t.Ended = workflow.Now(ctx)
	t.Outputs = outputs
	switch {
	case err == nil:
		t.Status = TrialCompleted
	case s.stopped[n]:
		t.Status = TrialEarlyTerminated
	case isCanceled(err):
		t.Status = TrialCanceled
	default:
		t.Status = TrialFailed
		t.Error = ErrorMessage(err)
	}
}

// runningTrials lists the running trials in trial order.
func (s *sweepRun) runningTrials() []int {
	var out []int
	for _, t := range s.st.Trials {
		if t.Status == TrialRunning {
			out = append(out, t.Trial)
		}
	}
	return out
}

// poll reads the primary metric's new reports of the given trials.
func (s *sweepRun) poll(ctx workflow.Context, trials []int) {
	if len(trials) == 0 {
		return
	}
	in := sweepacts.ReadTrialMetricsInput{RunID: s.in.RunID, Datastore: s.in.Settings.DefaultDatastore, Metric: s.sw.Objective.PrimaryMetric}
	for _, n := range trials {
		for _, step := range s.metricSteps(n) {
			in.Files = append(in.Files, sweepacts.TrialMetricsFile{Trial: n, StepPath: step, Offset: s.offset(n, step)})
		}
	}
	actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		Summary:             metricsSummary(trials),
		TaskQueue:           plan.DefaultTaskQueue,
		StartToCloseTimeout: time.Minute,
		RetryPolicy:         &temporal.RetryPolicy{MaximumAttempts: 3},
	})
	var got []sweepacts.TrialMetrics
	if err := workflow.ExecuteActivity(actx, sweepacts.ReadTrialMetricsName, in).Get(ctx, &got); err != nil {
		// Metrics are read again at the next poll.
		return
	}
	for i, m := range got {
		t := &s.st.Trials[m.Trial]
		step := in.Files[i].StepPath
		if m.Reset {
			t.Points = nil
		}
		s.setOffset(m.Trial, step, m.Offset)
		for _, p := range m.Points {
			t.Points = append(t.Points, sweep.Point{Step: len(t.Points) + 1, Value: p.Value})
		}
		s.fresh[m.Trial] += len(m.Points)
	}
}

// offset is where the next read of a trial step's metrics file starts.
// Offsets live in the trial's state, one per metrics file, in metricSteps
// order.
func (s *sweepRun) offset(n int, step string) int64 {
	t := s.st.Trials[n]
	for i, st := range s.metricSteps(n) {
		if st == step && i < len(t.Offsets) {
			return t.Offsets[i]
		}
	}
	return 0
}

func (s *sweepRun) setOffset(n int, step string, off int64) {
	t := &s.st.Trials[n]
	steps := s.metricSteps(n)
	for len(t.Offsets) < len(steps) {
		t.Offsets = append(t.Offsets, 0)
	}
	for i, st := range steps {
		if st == step {
			t.Offsets[i] = off
		}
	}
}

// earlySignalChange is the GetVersion id of a sweep telling a trial it
// stops it early before cancelling it (version 1).
const earlySignalChange = "trial-early-signal"

// terminateEarly applies the early-termination policy to the metrics read
// so far and stops the running trials it picks.
func (s *sweepRun) terminateEarly(ctx workflow.Context) {
	if s.sw.EarlyTermination == nil {
		return
	}
	series := make([]sweep.Series, 0, len(s.st.Trials))
	for _, t := range s.st.Trials {
		if t.Status == TrialFailed || t.Status == TrialCanceled {
			continue
		}
		// New lets the policy evaluate every interval among the reports
		// read since it last ran, not only the latest.
		series = append(series, sweep.Series{Trial: t.Trial, Points: t.Points, Finished: t.Status != TrialRunning, New: s.fresh[t.Trial]})
		s.fresh[t.Trial] = 0
	}
	for _, n := range sweep.Terminate(*s.sw.EarlyTermination, s.sw.Objective.Goal, series) {
		if n >= 0 && n < len(s.st.Trials) && s.st.Trials[n].Status == TrialRunning && !s.stopped[n] {
			s.stopped[n] = true
			if workflow.GetVersion(ctx, earlySignalChange, workflow.DefaultVersion, 1) == 1 {
				// Said before the cancellation, so the trial's
				// PorchStatus can say why it ended.
				workflow.SignalExternalWorkflow(ctx, s.st.Trials[n].WorkflowID, "", EarlyTerminatedSignal, nil)
			}
			s.cancels[n]()
		}
	}
}

// best is the completed trial whose last reported primary metric is best
// for the goal, ties to the earliest; -1 for none.
func (s *sweepRun) best() int {
	best, _ := SweepProgress{Goal: s.sw.Objective.Goal, Trials: s.st.Trials}.Best()
	return best
}

func better(goal string, v, than float64) bool {
	if goal == plan.GoalMinimize {
		return v < than
	}
	return v > than
}

// finish writes trials.csv and returns the best trial's outputs.
func (s *sweepRun) finish(ctx workflow.Context) (SweepStepResult, error) {
	best := s.best()
	records := make([]sweepacts.TrialRecord, 0, len(s.st.Trials))
	for i := range s.st.Trials {
		t := &s.st.Trials[i]
		t.IsBest = t.Trial == best
		records = append(records, trialRecord(*t, s.sw.Objective.Goal))
	}
	s.show(ctx)
	fctx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		Summary:             "finish: write trials.csv",
		TaskQueue:           plan.DefaultTaskQueue,
		StartToCloseTimeout: 5 * time.Minute,
		RetryPolicy:         &temporal.RetryPolicy{MaximumAttempts: 3},
	})
	var csvPath string
	in := sweepacts.FinishSweepInput{RunID: s.in.RunID, StepPath: s.in.Step.Path, Datastore: s.in.Settings.DefaultDatastore,
		Metric: s.sw.Objective.PrimaryMetric, Trials: records}
	if err := workflow.ExecuteActivity(fctx, sweepacts.FinishSweepName, in).Get(ctx, &csvPath); err != nil {
		return SweepStepResult{}, err
	}
	if best < 0 {
		if cause, n, failed := s.commonError(); n > 0 && workflow.GetVersion(ctx, sweepCauseChange, workflow.DefaultVersion, 1) == 1 {
			// The trials' own failure says more than the missing metric.
			return SweepStepResult{}, temporal.NewNonRetryableApplicationError(
				fmt.Sprintf("no trial completed with primary metric %q (%s): %d of %d failed trials ended with: %s; see %s",
					s.sw.Objective.PrimaryMetric, s.countStatuses(), n, failed, cause, csvPath), SweepFailedType, nil)
		}
		return SweepStepResult{}, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("no trial completed with primary metric %q (%s): check that the trial logs it, with mlflow.log_metric(%q, value) or a line in $PORCH_METRICS_FILE; see %s",
				s.sw.Objective.PrimaryMetric, s.countStatuses(), s.sw.Objective.PrimaryMetric, csvPath), SweepFailedType, nil)
	}
	outputs, err := s.publish(ctx, best)
	if err != nil {
		return SweepStepResult{}, err
	}
	return SweepStepResult{BestTrial: best, Outputs: outputs, Trials: csvPath}, nil
}

// countStatuses is "3 completed, 2 failed" over the trials.
// sweepCauseChange is the GetVersion id of a sweep none of whose trials
// completed naming its failed trials' most common error (version 1),
// asked only then.
const sweepCauseChange = "sweep-failure-cause"

// commonError is the most common first line of the failed trials' errors
// (the earliest trial's on a tie), how many failed trials ended with it,
// and how many failed.
func (s *sweepRun) commonError() (string, int, int) {
	var lines []string
	counts := map[string]int{}
	for _, t := range s.st.Trials {
		if t.Status != TrialFailed || t.Error == "" {
			continue
		}
		line, _, _ := strings.Cut(t.Error, "\n")
		if counts[line] == 0 {
			lines = append(lines, line)
		}
		counts[line]++
	}
	best, failed := "", 0
	for _, l := range lines {
		failed += counts[l]
		if counts[l] > counts[best] {
			best = l
		}
	}
	return best, counts[best], failed
}

func (s *sweepRun) countStatuses() string {
	order := []TrialStatus{TrialCompleted, TrialFailed, TrialEarlyTerminated, TrialCanceled, TrialRunning}
	counts := map[TrialStatus]int{}
	for _, t := range s.st.Trials {
		counts[t.Status]++
	}
	var parts []string
	for _, st := range order {
		if counts[st] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", counts[st], st))
		}
	}
	if len(parts) == 0 {
		return "no trials ran"
	}
	return strings.Join(parts, ", ")
}

func trialRecord(t TrialState, goal string) sweepacts.TrialRecord {
	r := sweepacts.TrialRecord{Trial: t.Trial, Params: t.Params, Status: string(t.Status),
		Started: t.Started, Ended: t.Ended, IsBest: t.IsBest, Error: t.Error}
	if n := len(t.Points); n > 0 {
		last := t.Points[n-1].Value
		r.Last = &last
		best, _ := t.BestValue(goal)
		r.Best = &best
	}
	return r
}
