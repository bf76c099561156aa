package compiler

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/porch-pipelines/porch/compiler/plan"
)

// rootInputs resolves the root pipeline's inputs: --set overrides, then the
// value given by a batch-style job, then the value or default written.
func (l *lowerer) rootInputs(body *pipelineAST, given []*inputAST, givenDir, source string) []plan.Input {
	sets := l.setOverrides(body.Inputs)
	var out []plan.Input
	for _, decl := range body.Inputs {
		typ := pipelineInputType(decl)
		dir, val := body.Dir, decl.Value
		if g := findInput(given, decl.Name); g != nil && g.Value != nil {
			dir, val = givenDir, g.Value
			typ = orDefault(typ, pipelineInputType(g))
		}
		in := plan.Input{Name: decl.Name, Type: orDefault(typ, "string"), Optional: decl.Optional, Pos: decl.Pos}
		set, isSet := sets[decl.Name]
		switch {
		case isSet && untyped(decl) && isPrimitive(in.Type):
			// An untyped literal takes the type of what replaces it.
			in.Type = inferType(set)
			in.Value = plan.Value{Kind: plan.ValueLiteral, Literal: set}
		case isSet:
			in.Value = l.setValue(decl, in.Type, set, source)
		case val != nil && (val.Lit != nil || val.Path != nil):
			in.Value = l.literalOrData(dir, in.Type, val)
			if val.Lit != nil && isPrimitive(in.Type) {
				l.checkLiteral(decl, in.Type, val.Lit.Value, val.Pos)
			}
		case decl.Default != nil:
			in.Value = l.literalOrData(body.Dir, in.Type, &valueAST{Lit: decl.Default})
		case decl.Optional:
			in.Value = plan.Value{Kind: plan.ValueNone}
		default:
			in.Value = plan.Value{Kind: plan.ValueNone}
			l.errorf(decl.Pos, fmt.Sprintf("give it a value in the YAML or run with --set inputs.%s=<value>", decl.Name),
				"required pipeline input %q has no value", decl.Name)
		}
		out = append(out, in)
	}
	return out
}

// setOverrides checks the --set keys and returns them by input name.
func (l *lowerer) setOverrides(decls []*inputAST) map[string]string {
	out := map[string]string{}
	for _, key := range sortedKeys(l.opts.Set) {
		// splitSets left only inputs.NAME keys.
		name := strings.TrimPrefix(key, "inputs.")
		if findInput(decls, name) == nil {
			l.errorf(setPos(key), withHint("the pipeline declares "+listOr(inputNames(decls), "none"), suggest(name, inputNames(decls))),
				"the pipeline has no input %q", name)
			continue
		}
		out[name] = l.opts.Set[key]
	}
	return out
}

// setValue converts a --set value to the input's type. Relative data paths
// given on the command line resolve against the working folder.
func (l *lowerer) setValue(decl *inputAST, typ, v, source string) plan.Value {
	if !isPrimitive(typ) {
		if remoteRef(v) {
			return l.setAsset(decl, typ, v, source)
		}
		if summary, detail := unreadableURI("data", v); summary != "" {
			l.errorf(plan.Pos{File: source}, detail, "--set inputs.%s: %s", decl.Name, summary)
			return plan.Value{Kind: plan.ValueNone}
		}
		p := v
		if !strings.Contains(v, "://") {
			if abs, err := filepath.Abs(v); err == nil {
				p = abs
			}
		}
		return plan.Value{Kind: plan.ValueData, Data: &plan.Data{Type: typ, Path: p, Mode: valueMode(decl.Value)}}
	}
	l.checkLiteral(decl, typ, v, plan.Pos{File: source})
	return plan.Value{Kind: plan.ValueLiteral, Literal: v}
}

func (l *lowerer) checkLiteral(decl *inputAST, typ, v string, pos plan.Pos) {
	d := *decl
	d.Type = typ
	if prob := literalProblem(&d, v); prob != "" {
		l.errorf(pos, fmt.Sprintf("give %s value that fits the declaration", article(typ)), "pipeline input %q: value %q %s", decl.Name, v, prob)
	}
}

func valueMode(v *valueAST) string {
	if v == nil {
		return ""
	}
	return v.Mode
}

// literalOrData turns a literal or path into a plan value of type typ.
func (l *lowerer) literalOrData(dir, typ string, v *valueAST) plan.Value {
	if v.Path == nil && isPrimitive(typ) {
		return plan.Value{Kind: plan.ValueLiteral, Literal: v.Lit.Value}
	}
	p := v.Path
	if p == nil {
		p = v.Lit
	}
	if a, _ := findAsset(l.catalog, p.Value, orDefault(v.Type, typ)); a != nil {
		return plan.Value{Kind: plan.ValueData, Data: assetData(*a, orDefault(v.Type, typ), v.Mode)}
	}
	return plan.Value{Kind: plan.ValueData, Data: &plan.Data{Type: orDefault(orDefault(v.Type, typ), "uri_folder"),
		Path: dataPath(dir, p.Value), Mode: v.Mode}}
}

// dataPath makes a local path absolute against dir and keeps URIs.
func dataPath(dir, p string) string {
	if strings.Contains(p, "://") {
		return p
	}
	return localPath(dir, p)
}

// declDefault is a declared input's default as a value, ValueNone without.
func (l *lowerer) declDefault(dir string, in *inputAST) plan.Value {
	typ := orDefault(pipelineInputType(in), "string")
	switch {
	case in.Default != nil:
		return l.literalOrData(dir, typ, &valueAST{Lit: in.Default})
	case in.Value != nil && (in.Value.Lit != nil || in.Value.Path != nil):
		return l.literalOrData(dir, typ, in.Value)
	}
	return plan.Value{Kind: plan.ValueNone}
}

// stepInputs binds every input a step declares.
func (l *lowerer) stepInputs(sc *scope, s *stepAST) []plan.Input {
	decls := s.Component.Inputs
	if s.Component.Inline {
		decls = s.Inputs
	}
	out := []plan.Input{}
	for _, decl := range decls {
		typ := decl.Type
		if s.Component.Inline {
			typ = stepInputType(sc.pl, sc.steps, s, decl.Name, 0)
		}
		in := plan.Input{Name: decl.Name, Type: orDefault(typ, "string"), Optional: decl.Optional, Pos: decl.Pos}
		b := findInput(s.Inputs, decl.Name)
		if b != nil && b.Value != nil {
			in.Pos, in.Mode = b.Pos, b.Value.Mode
			in.Value = l.bindValue(sc, in.Type, b.Value)
		} else {
			in.Value = l.declDefault(s.Component.Dir, decl)
		}
		out = append(out, in)
	}
	return out
}

// bindValue lowers the value a step gives one of its inputs.
func (l *lowerer) bindValue(sc *scope, typ string, v *valueAST) plan.Value {
	if v.Ref == nil {
		return l.literalOrData(sc.pl.Dir, typ, v)
	}
	r := v.Ref
	switch r.Kind {
	case refParentInput:
		return plan.Value{Kind: plan.ValueParentInput, Input: r.Name}
	case refStepOutput:
		return plan.Value{Kind: plan.ValueStepOutput, Step: r.Step, Output: r.Name}
	case refStepInput:
		return l.stepInputValue(sc, typ, r)
	}
	return plan.Value{Kind: plan.ValueNone}
}

// stepInputValue resolves ${{parent.jobs.t.inputs.y}} to what t's input y
// is bound to, or its default.
func (l *lowerer) stepInputValue(sc *scope, typ string, r *refAST) plan.Value {
	t := sc.steps[r.Step]
	key := r.Step + "." + r.Name
	if sc.visiting[key] {
		l.errorf(r.Pos, "make one of the inputs a value or a binding to a step output",
			"input %q of step %q is bound to itself through other step inputs", r.Name, r.Step)
		return plan.Value{Kind: plan.ValueNone}
	}
	sc.visiting[key] = true
	defer delete(sc.visiting, key)
	if b := findInput(t.Inputs, r.Name); b != nil && b.Value != nil {
		return l.bindValue(sc, typ, b.Value)
	}
	if d := findInput(t.Component.Inputs, r.Name); d != nil {
		return l.declDefault(t.Component.Dir, d)
	}
	return plan.Value{Kind: plan.ValueNone}
}

// stepOutputs lists a step's outputs in declaration order, with the step's
// settings and pipeline-output bindings applied. artifacts is implicit.
func (l *lowerer) stepOutputs(sc *scope, s *stepAST) []plan.Output {
	decls := s.Component.Outputs
	if s.Component.Inline {
		decls = s.Outputs
	}
	var out []plan.Output
	for _, d := range decls {
		if d.Name == plan.ArtifactsOutput {
			continue
		}
		o := plan.Output{Name: d.Name, Type: orDefault(d.Type, "uri_folder"), Mode: d.Mode, Pos: d.Pos}
		b := findOutput(s.Outputs, d.Name)
		if !s.Component.Inline && d.Path != nil {
			o.Path = l.normalizePath(d.Path, d.Name)
		}
		if b != nil {
			o.Pos = b.Pos
			o.Type, o.Mode = orDefault(b.Type, o.Type), orDefault(b.Mode, o.Mode)
			if b.Path != nil {
				o.Path = l.normalizePath(b.Path, d.Name)
			}
			if b.Ref != nil && b.Ref.Kind == refParentOutput {
				o.Parent = b.Ref.Name
				if po := findOutput(sc.pl.Outputs, b.Ref.Name); po != nil {
					o.Type, o.Mode = orDefault(po.Type, o.Type), orDefault(po.Mode, o.Mode)
					if po.Path != nil {
						o.Path = l.normalizePath(po.Path, po.Name)
					}
				}
			}
		}
		out = append(out, o)
	}
	return out
}
