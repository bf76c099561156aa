package workflows

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/porch-pipelines/porch/activities/command"
	"github.com/porch-pipelines/porch/activities/parallel"
	"github.com/porch-pipelines/porch/activities/reuse"
	"github.com/porch-pipelines/porch/activities/stepio"
	"github.com/porch-pipelines/porch/compiler/plan"
)

// node is one step of a running DAG.
type node struct {
	step  plan.Step
	state StepState
	// outputs are the step's outputs in declaration order with resolved
	// locations (Path is a URI), set when the step starts.
	outputs []plan.Output
	// deciding says the step's reuse is being decided; decision is what
	// was decided (nil when it was not).
	deciding bool
	decision *reuse.Decision
}

// output returns the step output called name.
func (n *node) output(name string) (plan.Output, bool) {
	for _, o := range n.outputs {
		if o.Name == name {
			return o, true
		}
	}
	return plan.Output{}, false
}

// dag is the state of one Pipeline run. Its nodes are in plan order
// (topological, ties by declaration), and every decision walks them in that
// order, so the workflow is deterministic.
type dag struct {
	in            PipelineInput
	nodes         []*node
	byName        map[string]*node
	inputs        map[string]plan.Input
	parentOutputs map[string]string
	// pending are records of succeeded steps not yet written.
	pending []reuse.Record
	// started is when the run's first execution started; executions
	// counts the executions before this one (continued.go).
	started    time.Time
	executions int
}

func newDAG(in PipelineInput) *dag {
	d := &dag{
		in:            in,
		byName:        map[string]*node{},
		inputs:        map[string]plan.Input{},
		parentOutputs: map[string]string{},
	}
	for _, s := range in.Pipeline.Steps {
		n := &node{step: s, state: StepState{
			Path:       s.Path,
			Type:       s.Type,
			Status:     StatusWaiting,
			WorkflowID: in.RunID + "/" + s.Path,
		}}
		d.nodes = append(d.nodes, n)
		d.byName[s.Name] = n
	}
	for _, i := range in.Inputs {
		d.inputs[i.Name] = i
	}
	for _, o := range in.Outputs {
		if o.Path != "" {
			d.parentOutputs[o.Name] = o.Path
		}
	}
	return d
}

// ready returns the waiting steps whose dependencies all succeeded (or
// were reused), in plan order.
func (d *dag) ready() []*node {
	var out []*node
	for _, n := range d.nodes {
		if n.state.Status == StatusWaiting && !n.deciding && d.depsDone(n) {
			out = append(out, n)
		}
	}
	return out
}

func (d *dag) depsDone(n *node) bool {
	for _, dep := range n.step.DependsOn {
		if st := d.byName[dep].state.Status; st != StatusSucceeded && st != StatusReused {
			return false
		}
	}
	return true
}

// skipBlocked marks waiting steps skipped when a dependency can no longer
// succeed. Plan order puts dependencies first, so one pass is transitive.
func (d *dag) skipBlocked(now time.Time) {
	for _, n := range d.nodes {
		if n.state.Status != StatusWaiting {
			continue
		}
		for _, dep := range n.step.DependsOn {
			switch d.byName[dep].state.Status {
			case StatusFailed, StatusSkipped, StatusCanceled:
				n.state.Status = StatusSkipped
				n.state.Ended = now
				n.state.Error = fmt.Sprintf("skipped: dependency %q did not succeed", dep)
			}
			if n.state.Status == StatusSkipped {
				break
			}
		}
	}
}

// reuse marks ready steps that an earlier execution of the run finished as
// succeeded, without running them, and returns those it marked.
func (d *dag) reuse(now time.Time) []*node {
	if len(d.in.Reused) == 0 {
		return nil
	}
	var marked []*node
	for _, n := range d.ready() {
		if !runsOnCompute(n.step.Type) || !slices.Contains(d.in.Reused, n.step.Path) {
			continue
		}
		d.start(n, now)
		n.state.Status = StatusSucceeded
		n.state.Ended = now
		n.state.Detail = "reused: succeeded in an earlier execution"
		n.state.Outputs = d.locations(n)
		marked = append(marked, n)
	}
	return marked
}

// cancelWaiting marks every step that never started as canceled.
func (d *dag) cancelWaiting(now time.Time) {
	for _, n := range d.nodes {
		if n.state.Status == StatusWaiting {
			n.state.Status = StatusCanceled
			n.state.Ended = now
		}
	}
}

// start resolves a step's output locations and marks it running.
func (d *dag) start(n *node, now time.Time) {
	n.state.Status = StatusRunning
	n.state.Started = now
	n.state.Attempt = 1
	switch {
	case n.step.Command != nil:
		n.state.Claims = quotaRequest(n.step.Compute, n.step.Command.Resources) != nil
		// A sweep's trials are steps of their own; only a command step's
		// workflow answers SpotQuery.
		n.state.Spot = n.step.Type == plan.StepCommand && n.step.Command.Resources.Spot()
	case n.step.Parallel != nil:
		n.state.Claims = quotaRequest(n.step.Compute, n.step.Parallel.Resources) != nil
		n.state.Spot = n.step.Parallel.Resources.Spot()
	}
	n.outputs = d.stepOutputs(n.step)
}

// stepOutputs returns a step's outputs with resolved URIs. Command steps
// always have the reserved artifacts output.
func (d *dag) stepOutputs(s plan.Step) []plan.Output {
	var outs []plan.Output
	hasArtifacts := false
	for _, o := range s.Outputs {
		switch {
		case o.Parent != "" && d.parentOutputs[o.Parent] != "":
			o.Path = d.parentOutputs[o.Parent]
		case o.Path != "":
			o.Path = d.expand(o.Path)
		case runsOnCompute(s.Type) || o.Name == plan.ArtifactsOutput:
			o.Path = plan.DefaultOutputURI(d.in.Settings.DefaultDatastore, d.in.RunID, s.Path, o.Name)
			if o.Type == "uri_file" {
				// A file output names the file itself, not a folder.
				o.Path = strings.TrimSuffix(o.Path, "/")
			}
		}
		hasArtifacts = hasArtifacts || o.Name == plan.ArtifactsOutput
		outs = append(outs, o)
	}
	if runsOnCompute(s.Type) && !hasArtifacts {
		outs = append(outs, plan.Output{
			Name: plan.ArtifactsOutput,
			Type: "uri_folder",
			Path: stepio.StepArtifactsURI(d.in.Settings.DefaultDatastore, d.in.RunID, s.Path),
		})
	}
	return outs
}

// runsOnCompute says whether a step runs on a compute itself (and so has an
// artifacts folder and default output locations), rather than through a
// nested pipeline's steps.
func runsOnCompute(t plan.StepType) bool {
	return t == plan.StepCommand || t == plan.StepParallel
}

// expand substitutes the run-time names an output path may hold.
func (d *dag) expand(path string) string {
	path = strings.ReplaceAll(path, "${{name}}", d.in.RunID)
	return strings.ReplaceAll(path, "${{default_datastore}}", d.in.Settings.DefaultDatastore)
}

// resolve turns a binding into a value the step can use.
func (d *dag) resolve(v plan.Value) plan.Value {
	switch v.Kind {
	case plan.ValueParentInput:
		if in, ok := d.inputs[v.Input]; ok {
			return in.Value
		}
		return plan.Value{Kind: plan.ValueNone}
	case plan.ValueStepOutput:
		n := d.byName[v.Step]
		if n == nil {
			return plan.Value{Kind: plan.ValueNone}
		}
		o, ok := n.output(v.Output)
		if !ok || o.Path == "" {
			return plan.Value{Kind: plan.ValueNone}
		}
		return plan.Value{Kind: plan.ValueData, Data: &plan.Data{Type: o.Type, Path: o.Path, Mode: o.Mode}}
	default:
		return v
	}
}

func (d *dag) resolveInputs(in []plan.Input) []plan.Input {
	out := make([]plan.Input, 0, len(in))
	for _, i := range in {
		i.Value = d.resolve(i.Value)
		out = append(out, i)
	}
	return out
}

func (d *dag) commandInput(n *node) CommandStepInput {
	return CommandStepInput{
		Compute: n.step.Compute,
		Quota:   quotaRequest(n.step.Compute, n.step.Command.Resources),
		Run: command.RunCommandInput{Step: stepio.Step{
			RunID:            d.in.RunID,
			StepPath:         n.step.Path,
			DefaultDatastore: d.in.Settings.DefaultDatastore,
			Command:          *n.step.Command,
			Inputs:           d.resolveInputs(n.step.Inputs),
			Outputs:          n.outputs,
			SubmittedBy:      d.in.Settings.SubmittedBy,
		}},
	}
}

func (d *dag) parallelInput(n *node) ParallelStepInput {
	return ParallelStepInput{
		Compute:    n.step.Compute,
		Quota:      quotaRequest(n.step.Compute, n.step.Parallel.Resources),
		ParentPath: d.in.Prefix,
		Plan: parallel.PlanMiniBatchesInput{
			RunID:            d.in.RunID,
			StepPath:         n.step.Path,
			DefaultDatastore: d.in.Settings.DefaultDatastore,
			Parallel:         *n.step.Parallel,
			Inputs:           d.resolveInputs(n.step.Inputs),
			Outputs:          n.outputs,
			SubmittedBy:      d.in.Settings.SubmittedBy,
		},
	}
}

func (d *dag) sweepInput(n *node) SweepStepInput {
	step := n.step
	step.Inputs = d.resolveInputs(step.Inputs)
	return SweepStepInput{
		PlanVersion: d.in.PlanVersion, RunID: d.in.RunID, Name: d.in.Name, Experiment: d.in.Experiment,
		Settings: d.in.Settings, Step: step, Outputs: n.outputs,
	}
}

func (d *dag) childPipelineInput(n *node) PipelineInput {
	sub := *n.step.Pipeline
	bound := map[string]plan.Input{}
	for _, i := range n.step.Inputs {
		bound[i.Name] = i
	}
	inputs := make([]plan.Input, 0, len(sub.Inputs))
	for _, decl := range sub.Inputs {
		if b, ok := bound[decl.Name]; ok {
			decl.Value = d.resolve(b.Value)
		}
		inputs = append(inputs, decl)
	}
	in := PipelineInput{
		PlanVersion: d.in.PlanVersion,
		RunID:       d.in.RunID,
		Name:        d.in.Name,
		Experiment:  d.in.Experiment,
		Settings:    d.in.Settings,
		Prefix:      n.step.Path,
		Reused:      d.in.Reused,
		Pipeline:    sub,
		Inputs:      inputs,
		Outputs:     n.outputs,
	}
	if d.in.Plan != nil {
		// The nested pipeline reads its steps from the stored plan.
		in.Plan, in.Pipeline, in.ContinueAfter = d.in.Plan, plan.Pipeline{}, d.in.ContinueAfter
	}
	return in
}

// finish records a step's result. It returns the step's error, if any.
func (d *dag) finish(ctx workflow.Context, f workflow.Future, n *node) error {
	var err error
	switch n.step.Type {
	case plan.StepPipeline:
		var r PipelineResult
		if err = f.Get(ctx, &r); err == nil {
			for _, o := range r.Outputs {
				n.setOutput(o)
			}
		}
	case plan.StepParallel:
		var r ParallelStepResult
		if err = f.Get(ctx, &r); err == nil {
			// The step's own progress query says as much while it can
			// answer; the run's record keeps this.
			n.state.Detail = ParallelProgress{Phase: PhaseDone, Counters: r.Counters}.Summary()
		}
	case plan.StepSweep:
		var r SweepStepResult
		if err = f.Get(ctx, &r); err == nil {
			for _, o := range r.Outputs {
				n.setOutput(o)
			}
			n.state.Detail = fmt.Sprintf("best trial %d", r.BestTrial)
		}
	default:
		var r command.RunCommandResult
		if err = f.Get(ctx, &r); err == nil {
			n.state.Attempt = r.Attempt
			// The step ran on its worker's host, not in its environment.
			n.state.Detail = r.EnvironmentNote
		}
	}
	n.state.Ended = workflow.Now(ctx)
	switch {
	case err == nil:
		n.state.Status = StatusSucceeded
		n.state.Outputs = d.locations(n)
	case isCanceled(err):
		n.state.Status = StatusCanceled
	default:
		n.state.Status = StatusFailed
		n.state.Error = ErrorMessage(err)
	}
	return err
}

// setOutput records where a nested pipeline put one of its outputs.
func (n *node) setOutput(loc OutputLocation) {
	for i := range n.outputs {
		if n.outputs[i].Name == loc.Name {
			n.outputs[i].Path = loc.URI
			return
		}
	}
	n.outputs = append(n.outputs, plan.Output{Name: loc.Name, Path: loc.URI})
}

// locations lists a finished step's outputs in declaration order.
func (d *dag) locations(n *node) []OutputLocation {
	var out []OutputLocation
	for _, o := range n.outputs {
		if o.Path != "" {
			out = append(out, OutputLocation{Name: o.Name, URI: o.Path})
		}
	}
	return out
}

// pipelineOutputs resolves the pipeline's own outputs from the steps that
// produce them.
func (d *dag) pipelineOutputs() []OutputLocation {
	var out []OutputLocation
	for _, o := range d.in.Pipeline.Outputs {
		if n := d.byName[o.Step]; n != nil {
			if r, ok := n.output(o.StepOutput); ok && r.Path != "" {
				out = append(out, OutputLocation{Name: o.Name, URI: r.Path})
			}
		}
	}
	return out
}

func (d *dag) states() []StepState {
	out := make([]StepState, len(d.nodes))
	for i, n := range d.nodes {
		out[i] = n.state
	}
	return out
}

// progress is the steps' states in a few words, for the run's current
// details: "2/5 steps succeeded, 1 running, 1 failed".
func (d *dag) progress() string {
	order := []StepStatus{StatusReused, StatusRunning, StatusFailed, StatusSkipped, StatusCanceled}
	counts := map[StepStatus]int{}
	for _, n := range d.nodes {
		counts[n.state.Status]++
	}
	parts := []string{fmt.Sprintf("%d/%d steps succeeded", counts[StatusSucceeded], len(d.nodes))}
	for _, st := range order {
		if counts[st] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", counts[st], st))
		}
	}
	return strings.Join(parts, ", ")
}

func (d *dag) stepAttributes(s plan.Step) temporal.SearchAttributes {
	return stepAttributes(d.keys(), s.Path, s.Type, s.Compute)
}

func (d *dag) keys() runKeys {
	return runKeys{d.in.RunID, d.in.Name, d.in.Experiment, d.in.Settings.SubmittedBy}
}

// runKeys are the search attributes of a run that every one of its
// workflows carries.
type runKeys struct {
	run, pipeline, experiment string
	// user is who submitted the run; runs submitted before porch recorded
	// it have none, and their steps' attributes stay as they were.
	user string
}

func (k runKeys) updates() []temporal.SearchAttributeUpdate {
	return updatesOf(k.keywords())
}

func (k runKeys) keywords() []keyword {
	kws := []keyword{{keyRun, k.run}, {keyPipeline, k.pipeline}}
	if k.experiment != "" {
		kws = append(kws, keyword{keyExperiment, k.experiment})
	}
	if k.user != "" {
		kws = append(kws, keyword{keyUser, k.user})
	}
	return kws
}

// stepAttributes are a step workflow's search attributes.
func stepAttributes(k runKeys, path string, typ plan.StepType, compute string) temporal.SearchAttributes {
	return temporal.NewSearchAttributes(stepUpdates(k, path, typ, compute)...)
}

func stepUpdates(k runKeys, path string, typ plan.StepType, compute string) []temporal.SearchAttributeUpdate {
	updates := append(k.updates(), keyStep.ValueSet(path), keyStepType.ValueSet(string(typ)))
	if compute != "" {
		updates = append(updates, keyCompute.ValueSet(compute))
	}
	return updates
}

// ErrorMessage is what a user needs from a step's or run's error: the
// innermost application error's message, without the child-workflow and
// activity wrappers around it; "canceled" or "timed out (<kind>)" for those
// ends; else the innermost error's text.
func ErrorMessage(err error) string {
	if err == nil {
		return ""
	}
	msg := err.Error()
	for e := err; e != nil; {
		next := errors.Unwrap(e)
		switch te := e.(type) {
		case *temporal.ApplicationError:
			msg = te.Message()
		case *temporal.CanceledError:
			msg = "canceled"
		case *temporal.TimeoutError:
			msg = "timed out (" + te.TimeoutType().String() + ")"
		default:
			// Wrappers' messages repeat their causes': only the last counts.
			if next == nil {
				msg = e.Error()
			}
		}
		e = next
	}
	return msg
}
