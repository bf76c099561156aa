package compiler

import (
	"fmt"
	"sort"
	"strings"

	"github.com/porch-pipelines/porch/compiler/plan"
)

// knownTypes are the input and output types porch understands.
var knownTypes = []string{"string", "integer", "number", "boolean", "uri_file", "uri_folder", "mltable",
	"custom_model", "mlflow_model", "triton_model"}

// checker runs the check phase: references, types, required inputs.
type checker struct {
	diags
	checkedComponents map[*componentAST]bool
	// root and sets let bindings of the root's untyped literals be checked
	// with their --set values.
	root *pipelineAST
	sets map[string]string
	// readFile is Options.ReadFile, to check that entry scripts exist;
	// scripts keeps what it said of each path, so that a script many
	// parallel steps share is read once.
	readFile func(string) ([]byte, error)
	scripts  map[string]error
	// catalog is Options.Catalog, to resolve azureml:<name>:<version> data.
	catalog *plan.Catalog
}

func newChecker(root *pipelineAST, sets map[string]string) *checker {
	return &checker{checkedComponents: map[*componentAST]bool{}, root: root, sets: sets, scripts: map[string]error{}}
}

// checkPipeline checks a pipeline and, once each, the components it uses.
func (c *checker) checkPipeline(pl *pipelineAST) {
	if pl == nil || pl.checked {
		return
	}
	pl.checked = true
	for _, in := range pl.Inputs {
		// A root input that --set replaces is never read: its written
		// path need not be one porch reads.
		_, replaced := c.sets["inputs."+in.Name]
		c.checkDecl(in, "pipeline input", replaced && pl == c.root)
		if in.Value != nil && in.Value.Ref != nil {
			c.errorf(in.Value.Pos, "give the pipeline input a value; bindings belong in steps", "pipeline input %q cannot be a binding", in.Name)
		}
	}
	c.checkCompute(pl.Compute)
	c.checkCompute(pl.Settings.DefaultCompute)
	steps := map[string]*stepAST{}
	for _, s := range pl.Steps {
		steps[s.Name] = s
	}
	for _, s := range pl.Steps {
		c.checkComponent(s.Component)
		c.checkStep(pl, steps, s)
	}
	c.checkPipelineOutputs(pl, steps)
}

// checkDecl checks an input declaration: a known type, a default that fits
// and, unless replaced, a data path porch can read.
func (c *checker) checkDecl(in *inputAST, what string, replaced bool) {
	if !c.checkType(in, what) {
		return
	}
	for _, lit := range []*scalarAST{in.Default, valueLit(in.Value)} {
		if lit == nil || !isPrimitive(in.Type) {
			continue
		}
		c.checkLiteral(in, lit, "change the value to fit the declaration", "%s %q: value %q %s", what, in.Name, lit.Value)
	}
	if v := in.Value; v != nil && v.Path != nil && !replaced {
		c.checkDataPath(v.Path, orDefault(in.Type, v.Type))
	}
}

// checkLiteral reports a literal that does not fit its declared input:
// an error when it is not of the input's type, as Azure ML refuses a value
// it cannot parse as one (Input._parse: int(float(v)) for an integer); a
// warning for what Azure ML's client lets through, a number that is not a
// whole one for an integer, or a value outside min, max or enum (the
// densenet example binds "224" to an input of enum True, False). The
// message is format with args and the problem.
func (c *checker) checkLiteral(decl *inputAST, lit *scalarAST, detail, format string, args ...any) {
	prob, wrongType := literalFit(decl, lit.Value)
	switch {
	case prob == "":
	case wrongType:
		c.errorf(lit.Pos, detail, format, append(args, prob)...)
	default:
		c.warnf(lit.Pos, asWritten, format, append(args, prob)...)
	}
}

// checkType reports an unknown declared type and whether the type is known.
func (c *checker) checkType(in *inputAST, what string) bool {
	if in.Type != "" && !contains(knownTypes, in.Type) {
		c.errorf(in.TypePos, withHint("use one of string, integer, number, boolean, uri_file, uri_folder, mltable, custom_model, mlflow_model",
			suggest(in.Type, knownTypes)), "%s %q has unknown type %q", what, in.Name, in.Type)
		return false
	}
	return true
}

func valueLit(v *valueAST) *scalarAST {
	if v == nil {
		return nil
	}
	return v.Lit
}

// checkDataPath resolves azureml:<name>:<version> data through the
// catalogue, checking the asset fits an input of type want ("" for
// untyped), and refuses other azureml references (registries, resource
// ids, unknown forms) and URIs porch cannot read (https://, wasbs://, ...).
func (c *checker) checkDataPath(s *scalarAST, want string) {
	if name, rest, ok := plan.SplitDatastoreURI(strings.TrimSpace(s.Value)); ok {
		c.checkDatastorePath("data", s, name, rest)
		return
	}
	if summary, detail := unreadableURI("data", s.Value); summary != "" {
		c.errorf(s.Pos, detail, "%s", summary)
		return
	}
	switch {
	case !remoteRef(s.Value):
	case !catalogRef(s.Value):
		summary, detail := foreignRef("data", s.Value, readableData+": use one of those")
		c.errorf(s.Pos, detail, "%s", summary)
	default:
		if summary, detail := dataProblem(c.catalog, s.Value, want); summary != "" {
			c.errorf(s.Pos, detail, "%s", summary)
		}
	}
}

// checkComponent checks a component's own declarations and command once.
func (c *checker) checkComponent(comp *componentAST) {
	if comp == nil || c.checkedComponents[comp] {
		return
	}
	c.checkedComponents[comp] = true
	if comp.Type == plan.StepPipeline {
		c.checkPipeline(comp.Pipeline)
		return
	}
	if comp.Inline || comp.SweepJob {
		// An inline step's command is checked with the step, a sweep
		// job's trial with the sweep (checkSweep).
		return
	}
	for _, in := range comp.Inputs {
		c.checkDecl(in, "component input", false)
	}
	c.checkOutputDecls(comp.Outputs)
	c.checkTemplate(comp.Command, comp.Inputs, comp.Outputs, "component")
}

func (c *checker) checkOutputDecls(outs []*outputAST) {
	for _, o := range outs {
		if o.Type != "" && !contains(knownTypes, o.Type) {
			c.errorf(o.Pos, withHint("use uri_folder, uri_file, mltable, custom_model or mlflow_model", suggest(o.Type, knownTypes)),
				"output %q has unknown type %q", o.Name, o.Type)
		}
	}
}

// checkTemplate checks a command's ${{inputs.x}} and ${{outputs.x}} against
// the declarations.
func (c *checker) checkTemplate(cmd commandAST, ins []*inputAST, outs []*outputAST, what string) {
	c.checkTemplateOf(cmd, ins, outs, what, "command")
}

// checkTemplateOf checks a template (field names it in messages: command,
// program_arguments) against the declarations.
func (c *checker) checkTemplateOf(cmd commandAST, ins []*inputAST, outs []*outputAST, what, field string) {
	if cmd.Command == nil {
		return
	}
	inputs := map[string]*inputAST{}
	for _, in := range ins {
		inputs[in.Name] = in
	}
	outputs := map[string]bool{}
	for _, o := range outs {
		outputs[o.Name] = true
	}
	i := 0
	walkRefs(cmd.Template.Parts, false, func(r *plan.Ref, optional bool) {
		pos := cmd.Command.Pos
		if i < len(cmd.RefPos) {
			pos = cmd.RefPos[i]
		}
		i++
		switch r.Kind {
		case plan.RefInput:
			in, ok := inputs[r.Name]
			switch {
			case !ok && strings.Contains(r.Name, "."):
				groupRef(&c.diags, pos, "${{inputs."+r.Name+"}}", r.Name)
			case !ok:
				c.errorf(pos, withHint(fmt.Sprintf("declare it under the %s's inputs:", what), suggest(r.Name, names(inputs))),
					"%s uses unknown input %q", field, r.Name)
			case in.Optional && !optional:
				c.warnf(pos, "wrap it in $[[ ]] so the part is dropped when the input is unset",
					"optional input %q is used outside $[[ ]]", r.Name)
			}
		case plan.RefOutput:
			if !outputs[r.Name] {
				c.errorf(pos, withHint(fmt.Sprintf("declare it under the %s's outputs:", what), suggest(r.Name, names(outputs))),
					"%s uses unknown output %q", field, r.Name)
			}
		}
	})
}

// walkRefs calls f for every reference of a template, saying whether it is
// inside an optional group.
func walkRefs(parts []plan.Part, optional bool, f func(*plan.Ref, bool)) {
	for _, p := range parts {
		if p.Ref != nil {
			f(p.Ref, optional)
		}
		walkRefs(p.Optional, true, f)
	}
}

// checkPipelineOutputs checks pipeline outputs bound at the pipeline level
// and warns about outputs no step produces.
func (c *checker) checkPipelineOutputs(pl *pipelineAST, steps map[string]*stepAST) {
	bound := map[string]int{}
	for _, s := range pl.Steps {
		for _, o := range s.Outputs {
			if o.Ref != nil && o.Ref.Kind == refParentOutput {
				bound[o.Ref.Name]++
			}
		}
	}
	for _, o := range pl.Outputs {
		if o.Ref != nil {
			if o.Ref.Kind != refStepOutput {
				c.errorf(o.Ref.Pos, "write ${{parent.jobs.<step>.outputs.<name>}}", "pipeline output %q must bind a step output", o.Name)
				continue
			}
			c.checkStepOutputRef(steps, o.Ref)
			bound[o.Name]++
		}
		switch n := bound[o.Name]; {
		case n == 0 && pl.Component == nil:
			c.warnf(o.Pos, "bind a step output to it with ${{parent.outputs."+o.Name+"}}", "pipeline output %q is not produced by any step", o.Name)
		case n > 1:
			c.errorf(o.Pos, "bind exactly one step output to it", "pipeline output %q is bound %d times", o.Name, n)
		}
	}
}

// checkStepOutputRef checks ${{parent.jobs.s.outputs.y}} and returns the
// output's type ("" when unknown).
func (c *checker) checkStepOutputRef(steps map[string]*stepAST, r *refAST) string {
	s, ok := steps[r.Step]
	if !ok {
		c.errorf(r.Pos, withHint("name a step under jobs:", suggest(r.Step, names(steps))), "%s refers to unknown step %q", r.Text, r.Step)
		return ""
	}
	if r.Name == plan.ArtifactsOutput {
		return "uri_folder"
	}
	outs := stepOutputTypes(s)
	t, ok := outs[r.Name]
	if !ok {
		c.errorf(r.Pos, withHint(fmt.Sprintf("step %q has outputs %s", s.Name, list(names(outs))), suggest(r.Name, names(outs))),
			"%s refers to unknown output %q of step %q", r.Text, r.Name, s.Name)
	}
	return t
}

// stepOutputTypes maps a step's outputs to their types.
func stepOutputTypes(s *stepAST) map[string]string {
	out := map[string]string{}
	decls := s.Outputs
	if !s.Component.Inline {
		decls = s.Component.Outputs
	}
	for _, o := range decls {
		out[o.Name] = orDefault(o.Type, "uri_folder")
	}
	for _, o := range s.Outputs {
		if _, ok := out[o.Name]; ok && o.Type != "" {
			out[o.Name] = o.Type
		}
	}
	return out
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// list formats names for a message: "a", "b" or (none).
func list(names []string) string {
	if len(names) == 0 {
		return "(none)"
	}
	sort.Strings(names)
	s := ""
	for i, n := range names {
		if i > 0 {
			s += ", "
		}
		s += fmt.Sprintf("%q", n)
	}
	return s
}
