package workflows

import (
	"fmt"
	"strings"
	"time"

	"github.com/porch-pipelines/porch/activities/command"
	"github.com/porch-pipelines/porch/activities/parallel"
	"github.com/porch-pipelines/porch/activities/stepio"
	"github.com/porch-pipelines/porch/compiler/plan"
	"github.com/porch-pipelines/porch/sweep"
)

// Workflow type names, registered explicitly so renaming a Go function never
// breaks a running history.
const (
	PipelineName    = "Pipeline"
	CommandStepName = "CommandStep"
)

// StepsQuery is the query that returns every step's StepState.
const StepsQuery = "steps"

// GraphQuery is the query a Pipeline workflow answers with its DAG, a
// graph.Graph: its steps, nested pipelines' included, and the step outputs
// each step reads. Unlike the steps query it does not change while the run
// runs.
const GraphQuery = "graph"

// Search attributes porch sets; the embedded server registers them, a real
// cluster needs them registered once (porch prints the command).
const (
	AttrRun        = "PorchRun"        // root run id, on the run and every step
	AttrPipeline   = "PorchPipeline"   // pipeline name
	AttrExperiment = "PorchExperiment" // experiment name
	AttrStep       = "PorchStep"       // step path, on step workflows
	AttrStepType   = "PorchStepType"   // command, pipeline, ...
	AttrCompute    = "PorchCompute"    // compute name, "" omitted
	AttrUser       = "PorchUser"       // who submitted the run (user@host), on the run and every step
	AttrStatus     = "PorchStatus"     // how a run, step or trial ended, in porch's words (status.go)
)

// Memo keys on the root run.
const (
	MemoSource = "source" // the pipeline YAML as submitted
	MemoPlan   = "plan"   // a one-line-per-step summary
	// MemoSubmittedBy is who submitted the run (user@host).
	MemoSubmittedBy = "submitted_by"
	// MemoTags are the run's tags (the job file's tags:, a schedule's
	// create_job tags), a map of strings.
	MemoTags = "tags"
)

// PipelineInput starts a DAG workflow: the root run or a nested pipeline step.
type PipelineInput struct {
	// PlanVersion is the plan format the pipeline was compiled to.
	PlanVersion int `json:"plan_version"`
	// RunID is the root run's workflow id. A root run started with none
	// (porch compile -o start-input) takes its workflow id.
	RunID string `json:"run_id"`
	// Name and Experiment label every step workflow's search attributes.
	Name       string        `json:"name"`
	Experiment string        `json:"experiment,omitempty"`
	Settings   plan.Settings `json:"settings"`
	// Prefix is the path of the pipeline step this DAG is ("" for the root).
	Prefix   string        `json:"prefix,omitempty"`
	Pipeline plan.Pipeline `json:"pipeline"`
	// Inputs are the pipeline's inputs with resolved values.
	Inputs []plan.Input `json:"inputs,omitempty"`
	// Outputs are output locations decided by the enclosing step (a
	// resolved URI in Path); a step output bound to one of them writes there.
	Outputs []plan.Output `json:"outputs,omitempty"`
	// Reused are the paths of command and parallel steps that succeeded in
	// an earlier execution of this run (porch job resume): they are not
	// run again, and their outputs are where that execution left them.
	Reused []string `json:"reused,omitempty"`
	// Plan names the stored plan (planstore.go) Pipeline is read from: a
	// run porch starts carries no plan, only this reference, and a nested
	// pipeline's is the pipeline of step Prefix in it. nil for a run whose
	// input holds its Pipeline (porch compile -o start-input, runs started
	// before plans were stored, sweep trials).
	Plan *PlanRef `json:"plan_ref,omitempty"`
	// State is a continued execution's DAG state (continued.go), gzipped
	// JSON; nil for a run's first execution.
	State []byte `json:"state,omitempty"`
	// ContinueAfter is the history length, in events, past which the DAG
	// stops starting steps and continues as new; 0 is dagEventBudget.
	ContinueAfter int `json:"continue_after,omitempty"`
}

// CommandStepInput starts a command step workflow.
type CommandStepInput struct {
	// Compute selects the task queue the command runs on.
	Compute string `json:"compute,omitempty"`
	// Quota is the cores the step claims before it runs; nil claims none.
	Quota *QuotaRequest           `json:"quota,omitempty"`
	Run   command.RunCommandInput `json:"run"`
	// Behaviour is what the DAG decided for the step; nil from DAGs
	// before stepBehaviourChange, whose steps ask with version markers.
	Behaviour *StepBehaviour `json:"behaviour,omitempty"`
}

// StepBehaviour is what a DAG decides once for the command steps it
// starts, so that each step needs no version markers (each a marker and
// a search-attribute update in its history) and no local activity of its
// own to learn it: whether it watches for a worker while its command is
// scheduled, and whether it sets PorchStatus as it ends.
type StepBehaviour struct {
	// PorchStatus says the server has PorchStatus registered.
	PorchStatus bool `json:"porch_status,omitempty"`
	// Watch says the step watches for a worker while its command is
	// scheduled: the DAG saw no worker poll the step's queue in the last
	// minute (or cannot know its queue). A step whose queue has a worker
	// waits without a timer.
	Watch bool `json:"watch,omitempty"`
	// Here says a step whose queue is its workflow's own runs its command
	// first in a local activity, on the worker that runs the step's
	// workflow task (runHereFirst); false from DAGs before hereChange.
	Here bool `json:"here,omitempty"`
}

// PipelineResult is a finished DAG's outputs.
type PipelineResult struct {
	Outputs []OutputLocation `json:"outputs,omitempty"`
}

// OutputLocation says where an output landed.
type OutputLocation struct {
	Name string `json:"name"`
	URI  string `json:"uri"`
}

// StepStatus is a step's lifecycle state.
type StepStatus string

// Step states.
const (
	StatusWaiting   StepStatus = "waiting"
	StatusRunning   StepStatus = "running"
	StatusSucceeded StepStatus = "succeeded"
	StatusFailed    StepStatus = "failed"
	StatusSkipped   StepStatus = "skipped"
	StatusCanceled  StepStatus = "canceled"
)

// StepState is one step as the steps query reports it.
type StepState struct {
	Path       string           `json:"path"`
	Type       plan.StepType    `json:"type"`
	Status     StepStatus       `json:"status"`
	WorkflowID string           `json:"workflow_id,omitempty"`
	Attempt    int32            `json:"attempt,omitempty"`
	Started    time.Time        `json:"started,omitempty"`
	Ended      time.Time        `json:"ended,omitempty"`
	Outputs    []OutputLocation `json:"outputs,omitempty"`
	Error      string           `json:"error,omitempty"`
	// Detail is what a reader learnt from the step's own workflow (a
	// parallel step's mini-batch counts); the DAG sets it only for a
	// parallel or sweep step that succeeded, from its result.
	Detail string `json:"detail,omitempty"`
	// Claims says the step claims cores from a quota before it runs: its
	// workflow answers QuotaWaitQuery.
	Claims bool `json:"claims,omitempty"`
	// Spot says the step runs on preemptible workers first: its workflow
	// answers SpotQuery.
	Spot bool `json:"spot,omitempty"`
	// Reuse is what the reuse decision said: why the step ran, or whose
	// outputs it reused; nil when none was made.
	Reuse *Reuse `json:"reuse,omitempty"`
}

// ParallelStepName is the workflow type of a parallel step.
const ParallelStepName = "ParallelStep"

// ProgressQuery is the query a parallel step answers with its
// ParallelProgress.
const ProgressQuery = "progress"

// ParallelStepInput starts a parallel step workflow.
type ParallelStepInput struct {
	// Compute selects the task queue the mini-batches run on.
	Compute string                        `json:"compute,omitempty"`
	Plan    parallel.PlanMiniBatchesInput `json:"plan"`
	// ParentPath is the enclosing pipeline step's path ("" for the root).
	ParentPath string `json:"parent_path,omitempty"`
	// State is a continued step's progress; nil when the step starts.
	State *ParallelState `json:"state,omitempty"`
	// Quota is the cores the step claims for its instances before it
	// plans; nil claims none. A continued step holds them already.
	Quota *QuotaRequest `json:"quota,omitempty"`
}

// ParallelState is what a parallel step carries across continue-as-new:
// counters and a cursor, never per-mini-batch data beyond one page.
type ParallelState struct {
	Plan    parallel.ParallelPlan `json:"plan"`
	Started time.Time             `json:"started"`
	// Next is the next mini-batch to start, or for a resumed step the
	// next one to list.
	Next int `json:"next"`
	// Resuming says the step lists unfinished mini-batches page by page;
	// Pending is the rest of the current page.
	Resuming bool  `json:"resuming,omitempty"`
	Pending  []int `json:"pending,omitempty"`
	// Requeued are mini-batches to start again first, each on its own:
	// their node was lost before they started (steps running as
	// instances), or their group failed them or ended early.
	Requeued   []int                     `json:"requeued,omitempty"`
	Counters   parallel.ParallelCounters `json:"counters"`
	Nodes      []string                  `json:"nodes,omitempty"`
	LastReport time.Time                 `json:"last_report"`
	// Spot counts a spot step's preemptions; Preempted are mini-batches
	// to run again because their worker was lost.
	Spot      ParallelSpot `json:"spot,omitzero"`
	Preempted []int        `json:"preempted,omitempty"`
	// Lost are the attempts mini-batches used in an earlier activity,
	// while they run again: on a held node whose worker stopped
	// heartbeating, or in a group (groupsChange).
	Lost []BatchCount `json:"lost,omitempty"`
	// Ran counts the mini-batches run() processed, RanMs the milliseconds
	// it took for them: what groups of mini-batches are sized by.
	Ran   int   `json:"ran,omitempty"`
	RanMs int64 `json:"ran_ms,omitempty"`
}

// ParallelStepResult is a finished parallel step.
type ParallelStepResult struct {
	LogDir   string                    `json:"log_dir"`
	Outputs  []stepio.OutputLocation   `json:"outputs,omitempty"`
	Counters parallel.ParallelCounters `json:"counters"`
}

// ParallelPhase is where a parallel step is.
type ParallelPhase string

// Parallel step phases.
const (
	PhasePlanning  ParallelPhase = "planning"
	PhaseRunning   ParallelPhase = "running"
	PhaseFinishing ParallelPhase = "finishing"
	PhaseDone      ParallelPhase = "done"
)

// Summary is the progress in a few words: "37/100 mini-batches, 2 failed,
// 4 running" while it runs.
func (p ParallelProgress) Summary() string {
	c := p.Counters
	switch p.Phase {
	case PhasePlanning:
		return "planning mini-batches"
	case PhaseDone:
		s := fmt.Sprintf("%d mini-batches: %d succeeded, %d failed", c.Batches, c.Succeeded, c.Failed)
		if c.Skipped > 0 {
			s += fmt.Sprintf(" (%d done earlier)", c.Skipped)
		}
		return s
	}
	s := fmt.Sprintf("%d/%d mini-batches", c.Processed(), c.Batches)
	if c.Failed > 0 {
		s += fmt.Sprintf(", %d failed", c.Failed)
	}
	if c.Running > 0 {
		s += fmt.Sprintf(", %d running", c.Running)
	}
	return s
}

// ParallelProgress is a parallel step as the progress query reports it.
type ParallelProgress struct {
	Phase    ParallelPhase             `json:"phase"`
	Plan     parallel.ParallelPlan     `json:"plan"`
	Counters parallel.ParallelCounters `json:"counters"`
	Started  time.Time                 `json:"started"`
	Nodes    []string                  `json:"nodes,omitempty"`
	Reason   string                    `json:"reason,omitempty"`
}

// SweepStepName is the workflow type of a sweep step.
const SweepStepName = "SweepStep"

// TrialsQuery is the query a sweep step answers with its SweepProgress.
const TrialsQuery = "trials"

// SweepProgress is a sweep step as the trials query reports it.
type SweepProgress struct {
	Metric    string       `json:"metric"`
	Goal      string       `json:"goal"`
	MaxTrials int          `json:"max_trials"`
	Trials    []TrialState `json:"trials"`
}

// Best is the trial with the best last-reported metric among the completed
// ones (-1 for none), and that value.
func (p SweepProgress) Best() (int, float64) {
	best, value := -1, 0.0
	for _, t := range p.Trials {
		if t.Status != TrialCompleted || len(t.Points) == 0 {
			continue
		}
		v := t.Points[len(t.Points)-1].Value
		if best < 0 || better(p.Goal, v, value) {
			best, value = t.Trial, v
		}
	}
	return best, value
}

// Summary is the sweep's progress in a few words: "5/8 trials: 3 completed,
// 1 early-terminated, 1 running; best trial 2: accuracy 0.912" (the best
// trial is the completed one whose last report is best).
func (p SweepProgress) Summary() string {
	counts := map[TrialStatus]int{}
	for _, t := range p.Trials {
		counts[t.Status]++
	}
	s := fmt.Sprintf("%d/%d trials", len(p.Trials), p.MaxTrials)
	var parts []string
	for _, st := range []TrialStatus{TrialCompleted, TrialEarlyTerminated, TrialFailed, TrialCanceled, TrialRunning} {
		if counts[st] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", counts[st], strings.ReplaceAll(string(st), "_", "-")))
		}
	}
	if len(parts) > 0 {
		s += ": " + strings.Join(parts, ", ")
	}
	if best, v := p.Best(); best >= 0 {
		s += fmt.Sprintf("; best trial %d: %s %.4g", best, p.Metric, v)
	}
	return s
}

// SweepStepInput starts a sweep step workflow.
type SweepStepInput struct {
	// PlanVersion, RunID, Name, Experiment and Settings are the run's, for
	// the trials' own workflows.
	PlanVersion int           `json:"plan_version"`
	RunID       string        `json:"run_id"`
	Name        string        `json:"name"`
	Experiment  string        `json:"experiment,omitempty"`
	Settings    plan.Settings `json:"settings"`
	// Step is the sweep step; its Inputs are resolved, except those the
	// search space sets.
	Step plan.Step `json:"step"`
	// Outputs are the step's outputs with their paths resolved: when the
	// sweep ends, an output with a path gets a copy of the best trial's,
	// and is the sweep's output there. An output without one is the best
	// trial's own.
	Outputs []plan.Output `json:"outputs,omitempty"`
	// State is a continued sweep's trials; nil when the sweep starts.
	State *SweepState `json:"state,omitempty"`
}

// SweepState is what a sweep carries across continue-as-new.
type SweepState struct {
	Seed    int64        `json:"seed"`
	Started time.Time    `json:"started"`
	Trials  []TrialState `json:"trials"`
	// Exhausted says the search space has no more trials.
	Exhausted bool `json:"exhausted,omitempty"`
}

// TrialStatus is a trial's lifecycle state.
type TrialStatus string

// Trial states.
const (
	TrialRunning         TrialStatus = "running"
	TrialCompleted       TrialStatus = "completed"
	TrialFailed          TrialStatus = "failed"
	TrialEarlyTerminated TrialStatus = "early_terminated"
	TrialCanceled        TrialStatus = "canceled"
)

// TrialState is one trial as the trials query reports it.
type TrialState struct {
	Trial      int              `json:"trial"`
	WorkflowID string           `json:"workflow_id"`
	Params     sweep.Assignment `json:"params"`
	Status     TrialStatus      `json:"status"`
	// Points are the primary metric's reports, numbered from 1.
	Points []sweep.Point `json:"points,omitempty"`
	// Offsets are how far each of the trial's metrics files was read.
	Offsets []int64   `json:"offsets,omitempty"`
	Started time.Time `json:"started"`
	Ended   time.Time `json:"ended,omitempty"`
	IsBest  bool      `json:"is_best,omitempty"`
	Error   string    `json:"error,omitempty"`
	// Outputs are where the trial's outputs landed.
	Outputs []OutputLocation `json:"outputs,omitempty"`
}

// BestValue is the best value the trial reported for the goal; false when
// it reported none.
func (t TrialState) BestValue(goal string) (float64, bool) {
	if len(t.Points) == 0 {
		return 0, false
	}
	best := t.Points[0].Value
	for _, p := range t.Points {
		if better(goal, p.Value, best) {
			best = p.Value
		}
	}
	return best, true
}

// SweepStepResult is a finished sweep: its best trial and that trial's
// outputs.
type SweepStepResult struct {
	BestTrial int              `json:"best_trial"`
	Outputs   []OutputLocation `json:"outputs,omitempty"`
	Trials    string           `json:"trials_csv"`
}
