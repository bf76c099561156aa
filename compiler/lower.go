package compiler

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/porch-pipelines/porch/compiler/plan"
)

// lowerer turns a checked, ordered AST into a plan.
type lowerer struct {
	*parser
	opts     Options
	settings plan.Settings
	// steps and inputs count the plan's steps and their inputs, against
	// Options.Limits, as the pipeline components expand.
	steps, inputs int
}

// scope is one pipeline instance being lowered: the root, or a pipeline
// component as one particular step uses it.
type scope struct {
	pl     *pipelineAST
	prefix string
	// known holds the instance's inputs where they are known at compile
	// time, for compute: ${{parent.inputs.c}}.
	known map[string]plan.Value
	// compute is the enclosing pipeline step's compute, the fallback of
	// the instance's steps; inherit says there is one (a nested pipeline's
	// steps take its compute, "" included, never the default compute).
	compute string
	inherit bool
	// identity is the enclosing job's identity type, the fallback.
	identity string
	steps    map[string]*stepAST
	// visiting holds the step inputs being resolved, "step.input".
	visiting map[string]bool
	// depth is how deep the instance is nested: 0 for the root.
	depth int
	// notDeterministic says the instance, or a pipeline that holds it,
	// is not deterministic: neither is any of its steps.
	notDeterministic bool
}

func (l *lowerer) newScope(pl *pipelineAST, prefix, compute string, known map[string]plan.Value) *scope {
	sc := &scope{pl: pl, prefix: prefix, known: known, compute: compute, steps: map[string]*stepAST{},
		visiting: map[string]bool{}}
	for _, s := range pl.Steps {
		sc.steps[s.Name] = s
	}
	return sc
}

// lowerRoot builds the plan of a root pipeline.
func (l *lowerer) lowerRoot(pl *pipelineAST, source string) *plan.Plan {
	p := &plan.Plan{Version: plan.Version, Source: source, Tags: pl.Tags}
	p.DisplayName = scalarValue(pl.DisplayName)
	p.ExperimentName = scalarValue(pl.ExperimentName)
	p.Description = scalarValue(pl.Description)
	p.Name = planName(scalarValue(pl.Name), p.DisplayName, source)
	l.settings = plan.Settings{
		DefaultCompute:        normalizeCompute(scalarValue(pl.Settings.DefaultCompute)),
		DefaultDatastore:      strings.TrimPrefix(scalarValue(pl.Settings.DefaultDatastore), "azureml:"),
		ContinueOnStepFailure: pl.Settings.ContinueOnStepFailure,
		ForceRerun:            pl.Settings.ForceRerun,
	}
	if l.settings.DefaultCompute == "" && pl.Settings.DefaultCompute == nil {
		l.settings.DefaultCompute = normalizeCompute(scalarValue(pl.Compute))
	}
	if l.settings.DefaultDatastore == "" {
		l.settings.DefaultDatastore = plan.DefaultDatastore
	}
	p.Settings = l.settings
	body := pl
	var given []*inputAST
	if pl.Component != nil {
		body, given = pl.Component.Pipeline, pl.Inputs
		l.checkGiven(pl, body)
	}
	inputs := l.rootInputs(body, given, pl.Dir, source)
	known := map[string]plan.Value{}
	for _, in := range inputs {
		known[in.Name] = in.Value
	}
	sc := l.newScope(body, "", "", known)
	if pl.Component != nil {
		// The job's top-level component is a pipeline component, nested
		// once, as the parser counted it.
		sc.depth = 1
	}
	sc.identity = orDefault(scalarValue(pl.Identity), scalarValue(body.Identity))
	sc.notDeterministic = pl.NotDeterministic || body.NotDeterministic
	p.Pipeline = l.lowerPipeline(sc)
	p.Pipeline.Inputs = inputs
	if pl.Component != nil {
		l.overrideOutputs(p.Pipeline.Outputs, pl.Outputs)
	}
	return p
}

// checkGiven checks that a batch-style job's inputs and outputs name the
// pipeline component's.
func (l *lowerer) checkGiven(pl, body *pipelineAST) {
	for _, in := range pl.Inputs {
		if findInput(body.Inputs, in.Name) == nil {
			l.errorf(in.Pos, withHint("the component declares "+list(inputNames(body.Inputs)), suggest(in.Name, inputNames(body.Inputs))),
				"job sets unknown input %q of its component", in.Name)
		}
	}
	for _, o := range pl.Outputs {
		if findOutput(body.Outputs, o.Name) == nil {
			l.errorf(o.Pos, withHint("the component declares "+list(outputNames(body.Outputs)), suggest(o.Name, outputNames(body.Outputs))),
				"job sets unknown output %q of its component", o.Name)
		}
	}
}

// overrideOutputs applies a batch-style job's outputs: settings.
func (l *lowerer) overrideOutputs(outs []plan.Output, given []*outputAST) {
	for i := range outs {
		o := findOutput(given, outs[i].Name)
		if o == nil {
			continue
		}
		outs[i].Type = orDefault(o.Type, outs[i].Type)
		outs[i].Mode = orDefault(o.Mode, outs[i].Mode)
		if o.Path != nil {
			outs[i].Path = l.normalizePath(o.Path, o.Name)
		}
	}
}

func (l *lowerer) lowerPipeline(sc *scope) plan.Pipeline {
	var pp plan.Pipeline
	for _, in := range sc.pl.Inputs {
		pp.Inputs = append(pp.Inputs, plan.Input{Name: in.Name, Type: orDefault(pipelineInputType(in), "string"),
			Optional: in.Optional, Value: l.declDefault(sc.pl.Dir, in), Pos: in.Pos})
	}
	for _, o := range sc.pl.Outputs {
		po := plan.Output{Name: o.Name, Type: orDefault(o.Type, "uri_folder"), Mode: o.Mode, Pos: o.Pos}
		if o.Path != nil {
			po.Path = l.normalizePath(o.Path, o.Name)
		}
		if o.Ref != nil && o.Ref.Kind == refStepOutput {
			po.Step, po.StepOutput = o.Ref.Step, o.Ref.Name
		}
		for _, s := range sc.pl.Steps {
			for _, so := range s.Outputs {
				if so.Ref != nil && so.Ref.Kind == refParentOutput && so.Ref.Name == o.Name {
					po.Step, po.StepOutput = s.Name, so.Name
				}
			}
		}
		pp.Outputs = append(pp.Outputs, po)
	}
	pp.Steps = make([]plan.Step, 0, len(sc.pl.order))
	for _, s := range sc.pl.order {
		path := joinPath(sc.prefix, s.Name)
		if !l.countStep(&l.steps, s.Pos, path) {
			break
		}
		pp.Steps = append(pp.Steps, l.lowerStep(sc, s, path))
	}
	return pp
}

func (l *lowerer) lowerStep(sc *scope, s *stepAST, path string) plan.Step {
	st := plan.Step{Name: s.Name, Path: path, Type: s.Type, Pos: s.Pos,
		DisplayName:      orDefault(s.DisplayName, s.Component.DisplayName),
		NotDeterministic: sc.notDeterministic || s.NotDeterministic || s.Component.NotDeterministic}
	if len(s.deps) > 0 {
		st.DependsOn = append([]string(nil), s.deps...)
	}
	st.Compute = l.stepCompute(sc, s)
	st.Inputs = l.stepInputs(sc, s)
	if l.inputs += len(st.Inputs); l.inputs > l.limits.MaxPlanInputs {
		l.halt(s.Pos, raise("pipeline components count once for every step that uses them: use fewer or smaller ones", EnvMaxPlanInputs),
			"the plan's steps have more than %d inputs (step %q has one too many)", l.limits.MaxPlanInputs, path)
		return st
	}
	st.Outputs = l.stepOutputs(sc, s)
	if s.Sweep != nil {
		lowerSweep(&st, s)
	}
	// A step's own identity wins over its job's.
	identity := orDefault(scalarValue(s.Identity), sc.identity)
	comp := s.Component
	if comp.Type == plan.StepPipeline {
		known := map[string]plan.Value{}
		for _, in := range st.Inputs {
			known[in.Name] = in.Value
			if in.Value.Kind == plan.ValueParentInput {
				known[in.Name] = sc.known[in.Value.Input]
			}
		}
		if !l.checkDepth(sc.depth+1, s.Pos, fmt.Sprintf("step %q", path)) {
			return st
		}
		csc := l.newScope(comp.Pipeline, st.Path, st.Compute, known)
		csc.inherit = true
		csc.depth = sc.depth + 1
		csc.identity = orDefault(identity, scalarValue(comp.Pipeline.Identity))
		csc.notDeterministic = st.NotDeterministic
		child := l.lowerPipeline(csc)
		st.Pipeline = &child
		return st
	}
	if comp.Type == plan.StepParallel {
		st.Parallel = lowerParallel(s)
		st.Parallel.Identity = identity
		applyTier(&st, s.Tier)
		return st
	}
	st.Command = mergeCommand(comp.Command, s.Over)
	st.Command.Identity = identity
	applyTier(&st, s.Tier)
	return st
}

// mergeCommand applies a step's overrides to its component's command.
func mergeCommand(c, over commandAST) *plan.Command {
	pc := &plan.Command{Template: c.Template, Code: c.Code, Environment: c.Environment, Env: c.Env,
		TimeoutSeconds: c.Timeout, Distribution: c.Dist}
	if c.Resources != nil {
		pc.Resources = *c.Resources
	}
	if over.Code != "" {
		pc.Code = over.Code
	}
	if over.Environment != "" {
		pc.Environment, pc.Env = over.Environment, over.Env
	}
	if over.Timeout != 0 {
		pc.TimeoutSeconds = over.Timeout
	}
	if over.Resources != nil {
		pc.Resources = *over.Resources
	}
	if over.Dist != nil {
		pc.Distribution = over.Dist
	}
	if len(c.EnvVars)+len(over.EnvVars) > 0 {
		pc.EnvironmentVariables = map[string]string{}
		for k, v := range c.EnvVars {
			pc.EnvironmentVariables[k] = v
		}
		for k, v := range over.EnvVars {
			pc.EnvironmentVariables[k] = v
		}
	}
	return pc
}

// stepCompute resolves a step's compute: its own (a name or a pipeline
// input known at compile time), else the enclosing pipeline step's, else
// the default. A step's own serverless or local is the default queue
// (""), whatever settings.default_compute says: as on Azure ML, where a
// step's serverless runs serverless, not on the pipeline's cluster.
func (l *lowerer) stepCompute(sc *scope, s *stepAST) string {
	inherited := l.settings.DefaultCompute
	if sc.inherit {
		inherited = sc.compute
	}
	if s.Compute == nil {
		return inherited
	}
	if !isWholeBinding(s.Compute.Value) {
		return normalizeCompute(s.Compute.Value)
	}
	r := l.parseBinding(s.Compute)
	if r == nil {
		return ""
	}
	v, ok := sc.known[r.Name]
	switch {
	case ok && v.Kind == plan.ValueLiteral:
		return normalizeCompute(v.Literal)
	case ok && v.Kind == plan.ValueNone:
		return inherited
	}
	l.errorf(s.Compute.Pos, "bind the pipeline input to a compute name (a literal) where the pipeline is used",
		"compute %s of step %q cannot be resolved at compile time", s.Compute.Value, s.Name)
	return ""
}

// normalizeCompute maps azureml:cpu-cluster to cpu-cluster and the default
// computes (serverless, local) to "".
func normalizeCompute(c string) string {
	c = strings.TrimPrefix(strings.TrimSpace(c), "azureml:")
	if i := strings.LastIndex(c, "/computes/"); i >= 0 && strings.HasPrefix(c, "/subscriptions/") {
		// An ARM id: /subscriptions/.../workspaces/<ws>/computes/<name>.
		c = c[i+len("/computes/"):]
	}
	switch c {
	case "serverless", "local":
		return ""
	}
	return c
}

func joinPath(prefix, name string) string {
	if prefix == "" {
		return name
	}
	return prefix + "/" + name
}

func scalarValue(s *scalarAST) string {
	if s == nil {
		return ""
	}
	return s.Value
}

// planName makes a name safe as a Temporal workflow id prefix.
func planName(name, display, source string) string {
	raw := name
	if raw == "" {
		raw = display
	}
	if raw == "" {
		raw = strings.TrimSuffix(filepath.Base(source), filepath.Ext(source))
	}
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(raw) {
		ok := (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') || r == '_' || r == '-'
		if !ok {
			r = '-'
		}
		if r == '-' && dash {
			continue
		}
		dash = r == '-'
		b.WriteRune(r)
	}
	out := strings.Trim(b.String(), "-_")
	if len(out) > 40 {
		out = strings.Trim(out[:40], "-_")
	}
	if out == "" {
		return "pipeline"
	}
	return out
}
