package compiler

import (
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/porch-pipelines/porch/compiler/plan"
)

// inputCtx says where an inputs: section is.
type inputCtx int

const (
	// ctxDecl is a pipeline's or component's own inputs.
	ctxDecl inputCtx = iota
	// ctxBind is a step's inputs, binding its component's.
	ctxBind
)

var (
	inputKeys   = []string{"type", "path", "mode", "default", "value", "optional", "min", "max", "enum", "description"}
	inputSilent = []string{"datastore", "path_on_compute", "is_control", "early_available", "name", "version", "display_name"}
	outputKeys  = []string{"type", "mode", "path", "name", "version", "description"}
	outSilent   = []string{"datastore", "is_control", "early_available", "asset_name", "asset_version",
		"path_on_compute", "display_name"}
)

func (p *parser) parseInputs(name string, n *yaml.Node, ctx inputCtx) []*inputAST {
	if isNull(n) {
		return nil
	}
	if n.Kind != yaml.MappingNode {
		p.errorf(nodePos(name, n), "write inputs as name: value pairs", "inputs must be a mapping, found %s", kindName(n))
		return nil
	}
	list := entries(n)
	if p.tooMany(name, list, "inputs") {
		return nil
	}
	var out []*inputAST
	p.checkIONames(name, "input", list)
	for _, e := range list {
		if in := p.parseInput(name, e, ctx); in != nil {
			out = append(out, in)
		}
	}
	return out
}

// inputModes are the modes Azure ML accepts for an input (mount is the
// SDK's older name of ro_mount).
var inputModes = []string{"ro_mount", "download", "direct", "eval_mount", "eval_download", "mount"}

func (p *parser) parseInput(name string, e entry, ctx inputCtx) *inputAST {
	in := &inputAST{Name: e.key.Value, Pos: nodePos(name, e.key)}
	v := e.val
	switch {
	case isNull(v):
		return in
	case v.Kind == yaml.ScalarNode:
		in.Value = p.scalarValue(name, v)
		return in
	case v.Kind != yaml.MappingNode:
		p.errorf(nodePos(name, v), "write a value, a ${{parent...}} binding or a mapping with type:", "input %q must be a scalar or a mapping, found %s", in.Name, kindName(v))
		return nil
	}
	f := p.fields(name, v, "input "+quote(in.Name), inputKeys, inputSilent)
	if t := p.scalar(name, f["type"]); t != nil {
		in.Type, in.TypePos = t.Value, t.Pos
	}
	in.Optional = p.boolean(name, f["optional"])
	in.Default = p.scalar(name, f["default"])
	in.Min = p.scalar(name, f["min"])
	in.Max = p.scalar(name, f["max"])
	in.Enum = p.scalarList(name, f["enum"])
	// Azure ML reads modes in any case (StringTransformedEnum).
	mode := strings.ToLower(p.str(name, f["mode"]))
	if mode != "" && !slices.Contains(inputModes, mode) {
		p.errorf(nodePos(name, f["mode"].val), withHint("use one of "+strings.Join(inputModes, ", "), suggest(mode, inputModes)),
			"input %q has mode %q, which is no input mode", in.Name, mode)
	}
	if val := p.scalar(name, f["value"]); val != nil {
		in.Value = p.scalarValue(name, f["value"].val)
	}
	if pth := p.scalar(name, f["path"]); pth != nil {
		asset, _ := findAsset(p.catalog, pth.Value, in.Type)
		val := &valueAST{Pos: pth.Pos, Path: pth, Asset: asset}
		if strings.Contains(pth.Value, "${{") {
			// A path: ${{parent...}} is a binding; scalarValue has
			// reported a broken one.
			val = p.scalarValue(name, f["path"].val)
		}
		in.Value = val
	}
	if in.Value == nil && ctx == ctxBind && in.Default != nil {
		in.Value = &valueAST{Pos: in.Default.Pos, Lit: in.Default}
	}
	if in.Value != nil {
		in.Value.Mode, in.Value.Type = mode, in.Type
	}
	return in
}

// scalarValue reads a scalar input value: a ${{...}} binding or a literal.
func (p *parser) scalarValue(name string, v *yaml.Node) *valueAST {
	s := newScalar(name, v)
	val := &valueAST{Pos: s.Pos}
	if v.Tag == "!!str" && strings.Contains(v.Value, "${{") {
		val.Ref = p.parseBinding(s)
		if val.Ref == nil {
			return nil
		}
		return val
	}
	val.Lit = s
	return val
}

func (p *parser) scalarList(name string, e entry) []*scalarAST {
	if e.key == nil || isNull(e.val) {
		return nil
	}
	if e.val.Kind != yaml.SequenceNode {
		p.errorf(nodePos(name, e.val), "write enum as a list: [a, b]", "enum must be a list, found %s", kindName(e.val))
		return nil
	}
	var out []*scalarAST
	for _, x := range e.val.Content {
		x = deref(x)
		if x.Kind != yaml.ScalarNode {
			p.errorf(nodePos(name, x), "write single values", "enum entries must be scalars, found %s", kindName(x))
			continue
		}
		out = append(out, newScalar(name, x))
	}
	return out
}

func (p *parser) parseOutputs(name string, n *yaml.Node) []*outputAST {
	if isNull(n) {
		return nil
	}
	if n.Kind != yaml.MappingNode {
		p.errorf(nodePos(name, n), "write outputs as name: value pairs", "outputs must be a mapping, found %s", kindName(n))
		return nil
	}
	list := entries(n)
	if p.tooMany(name, list, "outputs") {
		return nil
	}
	var out []*outputAST
	p.checkIONames(name, "output", list)
	for _, e := range list {
		o := &outputAST{Name: e.key.Value, Pos: nodePos(name, e.key)}
		v := e.val
		switch {
		case isNull(v):
		case v.Kind == yaml.ScalarNode:
			if !strings.Contains(v.Value, "${{") {
				p.errorf(nodePos(name, v), "leave it empty, bind it with ${{parent.outputs.x}}, or write a mapping with type:, mode: or path:",
					"output %q must be empty, a binding or a mapping, found %q", o.Name, v.Value)
				continue
			}
			o.Ref = p.parseBinding(newScalar(name, v))
			if o.Ref == nil {
				continue
			}
		case v.Kind == yaml.MappingNode:
			f := p.fields(name, v, "output "+quote(o.Name), outputKeys, outSilent)
			o.Type = p.str(name, f["type"])
			o.Mode = p.str(name, f["mode"])
			p.checkOutputSettings(name, o, f)
			o.Path = p.scalar(name, f["path"])
			switch {
			case o.Path != nil && isWholeBinding(o.Path.Value):
				o.Ref, o.Path = p.parseBinding(o.Path), nil
			case o.Path != nil:
				p.checkOutputPath(o.Name, o.Path)
			}
		default:
			p.errorf(nodePos(name, v), "write a mapping with type:, mode: or path:", "output %q must be a mapping, found %s", o.Name, kindName(v))
			continue
		}
		out = append(out, o)
	}
	return out
}

// isWholeBinding reports whether s is one ${{parent...}} binding.
func isWholeBinding(s string) bool {
	t := strings.TrimSpace(s)
	return strings.HasPrefix(t, "${{") && strings.HasSuffix(t, "}}") && strings.Count(t, "${{") == 1 &&
		strings.HasPrefix(strings.TrimSpace(t[3:]), "parent.")
}

func quote(s string) string {
	return `"` + s + `"`
}

// dataTypes are the input and output types that are locations, not literals.
func isPrimitive(t string) bool {
	switch t {
	case "string", "integer", "number", "boolean":
		return true
	}
	return false
}

// posAt shifts a scalar's position by offset characters when the scalar is
// on one line (so the column points into the value).
func posAt(s *scalarAST, offset int) plan.Pos {
	pos := s.Pos
	if !s.Inline || pos.Col == 0 || offset < 0 {
		return pos
	}
	if s.Quoted {
		offset++
	}
	pos.Col += offset
	return pos
}

// newScalar records a scalar node with its position and quoting.
func newScalar(name string, n *yaml.Node) *scalarAST {
	s := &scalarAST{Value: n.Value, Tag: n.Tag, Pos: nodePos(name, n),
		Quoted: n.Style&(yaml.SingleQuotedStyle|yaml.DoubleQuotedStyle) != 0,
		Block:  n.Style&(yaml.LiteralStyle|yaml.FoldedStyle) != 0}
	s.Inline = !s.Block && !strings.Contains(s.Value, "\n")
	return s
}
