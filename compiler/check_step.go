package compiler

import (
	"fmt"
	"sort"
	"strings"

	"github.com/porch-pipelines/porch/compiler/plan"
)

// checkStep checks a step's bindings, required inputs, outputs and compute,
// and records the sibling steps it depends on.
func (c *checker) checkStep(pl *pipelineAST, steps map[string]*stepAST, s *stepAST) {
	comp := s.Component
	decls := map[string]*inputAST{}
	for _, in := range comp.Inputs {
		decls[in.Name] = in
	}
	bound := map[string]bool{}
	for _, in := range s.Inputs {
		decl := in
		if !comp.Inline {
			decl = decls[in.Name]
			if decl == nil {
				// Azure ML drops an input its component does not declare,
				// with a warning; real examples rely on it.
				c.warnf(in.Pos, withHint(fmt.Sprintf("the component declares %s; remove the line, or declare the input in the component", list(names(decls))), suggest(in.Name, names(decls))),
					"step %q sets input %q, which its component does not declare: porch ignores it, as Azure ML does", s.Name, in.Name)
				continue
			}
		}
		if in.Value != nil {
			bound[in.Name] = true
			c.checkBinding(pl, steps, s, in, decl)
		}
	}
	if s.Sweep != nil {
		c.checkSweep(s, decls, bound)
	}
	if comp.Inline {
		for _, in := range s.Inputs {
			c.checkType(in, "step input")
		}
		c.checkOutputDecls(s.Outputs)
		c.checkTemplate(comp.Command, s.Inputs, s.Outputs, "step")
	} else {
		c.checkRequired(s, bound)
	}
	c.checkStepOutputs(pl, s)
	if s.Compute != nil && isWholeBinding(s.Compute.Value) {
		if r := (&parser{}).parseBinding(s.Compute); r == nil || r.Kind != refParentInput {
			c.errorf(s.Compute.Pos, "write a compute name or ${{parent.inputs.<name>}}", "compute %q must name a compute or a pipeline input", s.Compute.Value)
		} else if findInput(pl.Inputs, r.Name) == nil {
			c.errorf(s.Compute.Pos, withHint("declare it under the pipeline's inputs:", suggest(r.Name, inputNames(pl.Inputs))),
				"compute refers to unknown pipeline input %q", r.Name)
		}
	}
	c.checkCompute(s.Compute)
	if s.Type == plan.StepParallel {
		c.checkParallel(pl, steps, s)
	}
	s.deps = c.collectDeps(steps, s)
}

// checkRequired reports component inputs a step leaves unset that have no
// default and are not optional.
func (c *checker) checkRequired(s *stepAST, bound map[string]bool) {
	for _, in := range s.Component.Inputs {
		if bound[in.Name] || in.Optional || in.Default != nil || (in.Value != nil && in.Value.Ref == nil) {
			continue
		}
		c.errorf(s.Pos, fmt.Sprintf("bind it under the step's inputs: (for example %s: ${{parent.inputs.%s}}), or make the component input optional: true",
			in.Name, in.Name), "step %q does not set required input %q", s.Name, in.Name)
	}
}

func (c *checker) checkStepOutputs(pl *pipelineAST, s *stepAST) {
	decls := map[string]bool{}
	for _, o := range s.Component.Outputs {
		decls[o.Name] = true
	}
	for _, o := range s.Outputs {
		if !s.Component.Inline && !decls[o.Name] && o.Name != plan.ArtifactsOutput {
			c.errorf(o.Pos, withHint(fmt.Sprintf("the component declares %s", list(names(decls))), suggest(o.Name, names(decls))),
				"step %q sets unknown output %q", s.Name, o.Name)
			continue
		}
		if o.Ref == nil {
			continue
		}
		if o.Ref.Kind != refParentOutput {
			c.errorf(o.Ref.Pos, "write ${{parent.outputs.<name>}}", "step output %q can only be bound to a pipeline output", o.Name)
			continue
		}
		if findOutput(pl.Outputs, o.Ref.Name) == nil {
			c.errorf(o.Ref.Pos, withHint("declare it under the pipeline's outputs:", suggest(o.Ref.Name, outputNames(pl.Outputs))),
				"%s refers to unknown pipeline output %q", o.Ref.Text, o.Ref.Name)
		}
	}
}

// checkBinding checks one bound input against its declaration.
func (c *checker) checkBinding(pl *pipelineAST, steps map[string]*stepAST, s *stepAST, in, decl *inputAST) {
	v := in.Value
	want := decl.Type
	switch {
	case v.Ref != nil && v.Ref.Kind == refParentInput && c.untypedLiteral(pl, v.Ref.Name) != nil && isPrimitive(want):
		// An untyped pipeline literal takes the type of the input it binds.
		lit := *c.untypedLiteral(pl, v.Ref.Name)
		lit.Pos = v.Pos
		c.checkLiteral(decl, &lit, fmt.Sprintf("give pipeline input %q %s value that fits", v.Ref.Name, article(want)),
			"input %q of step %q: pipeline input %q value %q %s", in.Name, s.Name, v.Ref.Name, lit.Value)
	case v.Ref != nil:
		got, what := c.refType(pl, steps, s, v.Ref)
		if what != "" && !compatible(got, want) {
			c.errorf(v.Pos, fmt.Sprintf("bind %s value, or change the input's type", article(want)),
				"type mismatch: input %q of step %q is %s but %s is %s", in.Name, s.Name, want, what, got)
		}
	case v.Lit != nil && isPrimitive(want):
		lit := *v.Lit
		lit.Pos = v.Pos
		c.checkLiteral(decl, &lit, fmt.Sprintf("give %s value that fits the declaration", article(want)),
			"input %q of step %q: value %q %s", in.Name, s.Name, v.Lit.Value)
	case v.Lit != nil && want != "":
		c.checkDataPath(v.Lit, want)
	case v.Path != nil:
		if isPrimitive(want) {
			c.errorf(v.Pos, fmt.Sprintf("give %s value, not a path", article(want)),
				"type mismatch: input %q of step %q is %s but is given %s data", in.Name, s.Name, want, orDefault(v.Type, "uri_folder"))
		}
		c.checkDataPath(v.Path, orDefault(v.Type, want))
	}
}

// refType checks a binding and returns the type of what it points at and
// a description of it ("" when the binding is broken).
func (c *checker) refType(pl *pipelineAST, steps map[string]*stepAST, s *stepAST, r *refAST) (string, string) {
	switch r.Kind {
	case refParentInput:
		pi := findInput(pl.Inputs, r.Name)
		if pi == nil && strings.Contains(r.Name, ".") {
			groupRef(&c.diags, r.Pos, r.Text, r.Name)
			return "", ""
		}
		if pi == nil {
			c.errorf(r.Pos, withHint("declare it under the pipeline's inputs:", suggest(r.Name, inputNames(pl.Inputs))),
				"%s refers to unknown pipeline input %q", r.Text, r.Name)
			return "", ""
		}
		return pipelineInputType(pi), fmt.Sprintf("pipeline input %q", r.Name)
	case refStepOutput:
		t := c.checkStepOutputRef(steps, r)
		return t, fmt.Sprintf("output %q of step %q", r.Name, r.Step)
	case refStepInput:
		t, ok := steps[r.Step]
		if !ok {
			c.errorf(r.Pos, withHint("name a step under jobs:", suggest(r.Step, names(steps))), "%s refers to unknown step %q", r.Text, r.Step)
			return "", ""
		}
		ins := stepInputNames(t)
		if !contains(ins, r.Name) {
			c.errorf(r.Pos, withHint(fmt.Sprintf("step %q has inputs %s", t.Name, list(ins)), suggest(r.Name, ins)),
				"%s refers to unknown input %q of step %q", r.Text, r.Name, t.Name)
			return "", ""
		}
		return stepInputType(pl, steps, t, r.Name, 0), fmt.Sprintf("input %q of step %q", r.Name, r.Step)
	default:
		c.errorf(r.Pos, "bind step outputs to pipeline outputs under the step's outputs:", "%s cannot be bound to an input", r.Text)
		return "", ""
	}
}

// compatible reports whether a value of type got may bind an input of type want.
func compatible(got, want string) bool {
	switch {
	case got == "" || want == "" || got == want:
		return true
	case want == "string":
		return isPrimitive(got)
	case want == "number":
		return got == "integer"
	case isPrimitive(want):
		return false
	}
	// A data input takes any data, or a string holding a path.
	return !isPrimitive(got) || got == "string"
}

// collectDeps lists the sibling steps whose outputs s consumes, following
// ${{parent.jobs.t.inputs.y}} to what t's input is bound to.
func (c *checker) collectDeps(steps map[string]*stepAST, s *stepAST) []string {
	set := map[string]bool{}
	var follow func(t *stepAST, name string, depth int)
	add := func(v *valueAST, depth int) {
		if v == nil || v.Ref == nil {
			return
		}
		switch v.Ref.Kind {
		case refStepOutput:
			if _, ok := steps[v.Ref.Step]; ok {
				set[v.Ref.Step] = true
			}
		case refStepInput:
			if t, ok := steps[v.Ref.Step]; ok {
				follow(t, v.Ref.Name, depth+1)
			}
		}
	}
	follow = func(t *stepAST, name string, depth int) {
		if depth > len(steps)+1 {
			return
		}
		if in := findInput(t.Inputs, name); in != nil {
			add(in.Value, depth)
		}
	}
	for _, in := range s.Inputs {
		add(in.Value, 0)
	}
	deps := make([]string, 0, len(set))
	for d := range set {
		deps = append(deps, d)
	}
	sort.Strings(deps)
	return deps
}

// untypedLiteral returns the literal of a pipeline input declared without a
// type (as --set overrides it on the root), nil otherwise.
func (c *checker) untypedLiteral(pl *pipelineAST, name string) *scalarAST {
	pi := findInput(pl.Inputs, name)
	if pi == nil || !untyped(pi) {
		return nil
	}
	if v, ok := c.sets["inputs."+name]; ok && pl == c.root {
		return &scalarAST{Value: v, Tag: "!!str"}
	}
	return pi.Value.Lit
}

// untyped reports whether a pipeline input is a literal with no declared type.
func untyped(pi *inputAST) bool {
	return pi.Type == "" && pi.Value != nil && pi.Value.Type == "" && pi.Value.Lit != nil
}
