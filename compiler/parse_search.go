package compiler

import (
	"fmt"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/porch-pipelines/porch/compiler/plan"
)

// paramKinds are the search-space parameter types, as Azure ML names them.
var paramKinds = []string{plan.ParamChoice, plan.ParamRandint, plan.ParamUniform, plan.ParamLogUniform,
	plan.ParamQUniform, plan.ParamQLogUniform, plan.ParamNormal, plan.ParamLogNormal, plan.ParamQNormal,
	plan.ParamQLogNormal}

// paramKeys lists the keys each parameter type takes.
var paramKeys = map[string][]string{
	plan.ParamChoice:      {"type", "values"},
	plan.ParamRandint:     {"type", "upper"},
	plan.ParamUniform:     {"type", "min_value", "max_value"},
	plan.ParamLogUniform:  {"type", "min_value", "max_value"},
	plan.ParamQUniform:    {"type", "min_value", "max_value", "q"},
	plan.ParamQLogUniform: {"type", "min_value", "max_value", "q"},
	plan.ParamNormal:      {"type", "mu", "sigma"},
	plan.ParamLogNormal:   {"type", "mu", "sigma"},
	plan.ParamQNormal:     {"type", "mu", "sigma", "q"},
	plan.ParamQLogNormal:  {"type", "mu", "sigma", "q"},
}

// maxParamDepth bounds choices of dicts nested in choices of dicts.
const maxParamDepth = 16

// searchRef is a ${{search_space.x}} (or {search_space.x}) reference in the
// command of a standalone sweep job's trial.
type searchRef struct {
	Name string
	Pos  plan.Pos
}

// paramInfo is what the check and lower phases need to know about a name
// the search space sets: the input type its values have, and where it is.
type paramInfo struct {
	Type string
	Pos  plan.Pos
}

// searchSpace is a parsed search_space: the parameters as written, and
// every name they set (nested choice keys included) in order of appearance.
type searchSpace struct {
	Params []plan.Parameter
	Names  []string
	Info   map[string]paramInfo
}

// note records a name the search space sets; a name set with values of
// different types takes strings.
func (ss *searchSpace) note(name, typ string, pos plan.Pos) {
	if old, ok := ss.Info[name]; ok {
		if old.Type != typ {
			old.Type = "string"
			ss.Info[name] = old
		}
		return
	}
	ss.Names = append(ss.Names, name)
	ss.Info[name] = paramInfo{Type: typ, Pos: pos}
}

// parseSearchSpace reads search_space:, which a sweep must have.
func (p *parser) parseSearchSpace(name string, at plan.Pos, e entry) searchSpace {
	ss := searchSpace{Info: map[string]paramInfo{}}
	const want = "add search_space: with one parameter per trial input, such as lr: {type: uniform, min_value: 0.001, max_value: 0.1}"
	switch {
	case e.key == nil:
		p.errorf(at, want, "sweep has no search_space")
		return ss
	case isNull(e.val) || (e.val.Kind == yaml.MappingNode && len(entries(e.val)) == 0):
		p.errorf(nodePos(name, e.key), want, "search_space is empty")
		return ss
	case !p.mapping(name, e):
		return ss
	}
	for _, x := range entries(e.val) {
		if prm, ok := p.parseParam(name, x, &ss, 0); ok {
			ss.Params = append(ss.Params, prm)
		}
	}
	return ss
}

// parseParam reads one parameter expression, {type: uniform, ...}.
func (p *parser) parseParam(name string, x entry, ss *searchSpace, depth int) (plan.Parameter, bool) {
	prm := plan.Parameter{Name: x.key.Value, Pos: nodePos(name, x.key)}
	v := x.val
	if isNull(v) || v.Kind != yaml.MappingNode {
		p.errorf(nodePos(name, v), "write the parameter as a mapping such as {type: choice, values: [1, 2]}",
			"parameter %q must be a mapping with type:, found %s", prm.Name, kindName(v))
		return prm, false
	}
	t := lookup(v, "type")
	switch {
	case t == nil:
		p.errorf(prm.Pos, "add type: "+strings.Join(paramKinds, ", "), "parameter %q has no type", prm.Name)
		return prm, false
	case isNull(t.val) || t.val.Kind != yaml.ScalarNode:
		p.errorf(nodePos(name, t.val), "write type: "+strings.Join(paramKinds, ", "),
			"type of parameter %q must be the name of a distribution, found %s", prm.Name, kindName(t.val))
		return prm, false
	}
	prm.Kind = strings.ToLower(strings.TrimSpace(t.val.Value))
	keys, known := paramKeys[prm.Kind]
	if !known {
		p.errorf(nodePos(name, t.val), withHint("use one of "+strings.Join(paramKinds, ", "), suggest(t.val.Value, paramKinds)),
			"unknown parameter type %q", t.val.Value)
		return prm, false
	}
	f := p.fields(name, v, fmt.Sprintf("%s parameter %q", prm.Kind, prm.Name), keys, nil)
	ok := true
	switch prm.Kind {
	case plan.ParamChoice:
		prm.Choices, ok = p.parseChoices(name, prm, f["values"], ss, depth)
	case plan.ParamRandint:
		ok = p.parseRandint(name, &prm, f["upper"])
	case plan.ParamUniform, plan.ParamLogUniform, plan.ParamQUniform, plan.ParamQLogUniform:
		ok = p.parseUniform(name, &prm, f)
	default:
		ok = p.parseNormal(name, &prm, f)
	}
	if prm.Kind != plan.ParamChoice {
		typ := "number"
		if prm.Kind == plan.ParamRandint {
			typ = "integer"
		}
		ss.note(prm.Name, typ, prm.Pos)
	}
	return prm, ok
}

// number reads a required number of a parameter; want says which numbers
// it takes. A null or a list is an error as a missing key is: Azure ML
// refuses both, and a parameter left without its bounds would otherwise
// vanish from the search space.
func (p *parser) number(name string, prm plan.Parameter, e entry, key, want string) (float64, *scalarAST, bool) {
	switch {
	case e.key == nil:
		p.errorf(prm.Pos, fmt.Sprintf("add %s: <number>", key), "%s parameter %q has no %s", prm.Kind, prm.Name, key)
		return 0, nil, false
	case isNull(e.val) || e.val.Kind != yaml.ScalarNode:
		p.errorf(nodePos(name, e.val), fmt.Sprintf("write %s after %s:", want, key),
			"%s of parameter %q must be %s, found %s", key, prm.Name, want, kindName(e.val))
		return 0, nil, false
	}
	s := newScalar(name, e.val)
	f, ok := parseNumber(s.Value)
	if !ok {
		p.errorf(s.Pos, "write "+want, "%s of parameter %q must be %s, found %q", key, prm.Name, want, s.Value)
	}
	return f, s, ok
}

func (p *parser) parseRandint(name string, prm *plan.Parameter, e entry) bool {
	f, s, ok := p.number(name, *prm, e, "upper", "a whole number of at least 1")
	if !ok {
		return false
	}
	n, isInt := parseInt(s.Value)
	if !isInt || f < 1 || n > 1<<31 {
		p.errorf(s.Pos, "write a whole number of at least 1: randint draws from 0 up to upper - 1",
			"upper of randint parameter %q must be a whole number of at least 1, found %q", prm.Name, s.Value)
		return false
	}
	prm.Upper = int(n)
	return true
}

func (p *parser) parseUniform(name string, prm *plan.Parameter, f map[string]entry) bool {
	lo, los, ok1 := p.number(name, *prm, f["min_value"], "min_value", "a number")
	hi, his, ok2 := p.number(name, *prm, f["max_value"], "max_value", "a number")
	ok3 := p.parseQ(name, prm, f)
	if !ok1 || !ok2 || !ok3 {
		return false
	}
	if lo > hi {
		p.errorf(los.Pos, "swap them, or make min_value at most max_value",
			"min_value %s of parameter %q is above its max_value %s", los.Value, prm.Name, his.Value)
		return false
	}
	prm.Min, prm.Max = lo, hi
	return true
}

func (p *parser) parseNormal(name string, prm *plan.Parameter, f map[string]entry) bool {
	mu, _, ok1 := p.number(name, *prm, f["mu"], "mu", "a number")
	sigma, ss, ok2 := p.number(name, *prm, f["sigma"], "sigma", "a number")
	ok3 := p.parseQ(name, prm, f)
	if ok2 && sigma <= 0 {
		p.errorf(ss.Pos, "write a standard deviation above 0", "sigma of parameter %q must be above 0, found %s", prm.Name, ss.Value)
		ok2 = false
	}
	prm.Mu, prm.Sigma = mu, sigma
	return ok1 && ok2 && ok3
}

// parseQ reads q of the q forms (quniform, qnormal, ...).
func (p *parser) parseQ(name string, prm *plan.Parameter, f map[string]entry) bool {
	if !strings.HasPrefix(prm.Kind, "q") {
		return true
	}
	q, qs, ok := p.number(name, *prm, f["q"], "q", "a number")
	if ok && q <= 0 {
		p.errorf(qs.Pos, "write a step above 0: values are rounded to round(x/q)*q", "q of parameter %q must be above 0, found %s", prm.Name, qs.Value)
		return false
	}
	prm.Q = q
	return ok
}

// parseChoices reads a choice's values: scalars, or mappings whose entries
// are scalars or nested parameter expressions.
func (p *parser) parseChoices(name string, prm plan.Parameter, e entry, ss *searchSpace, depth int) ([]plan.Choice, bool) {
	switch {
	case e.key == nil:
		p.errorf(prm.Pos, "add values: [a, b, ...]", "choice parameter %q has no values", prm.Name)
		return nil, false
	case e.val.Kind == yaml.SequenceNode && len(e.val.Content) == 0:
		p.errorf(nodePos(name, e.key), "list at least one value: values: [a, b, ...]", "choice parameter %q has no values", prm.Name)
		return nil, false
	case isNull(e.val) || e.val.Kind != yaml.SequenceNode:
		p.errorf(nodePos(name, e.val), "write values as a list: [a, b, ...]", "values of parameter %q must be a list, found %s", prm.Name, kindName(e.val))
		return nil, false
	}
	var out []plan.Choice
	var tags []string
	ok := true
	for _, x := range e.val.Content {
		x = deref(x)
		switch {
		case x.Kind == yaml.ScalarNode && !isNull(x):
			out = append(out, plan.Choice{Literal: x.Value})
			tags = append(tags, literalType(newScalar(name, x)))
		case x.Kind == yaml.MappingNode && depth < maxParamDepth:
			nested, good := p.parseNested(name, x, ss, depth)
			ok = ok && good
			out = append(out, plan.Choice{Nested: nested})
			tags = append(tags, "string")
		default:
			p.errorf(nodePos(name, x), "write a value, or a mapping of names to values or parameter expressions",
				"values of parameter %q must be scalars or mappings, found %s", prm.Name, kindName(x))
			ok = false
		}
	}
	ss.note(prm.Name, choiceType(tags), prm.Pos)
	return out, ok
}

// parseNested reads one dict value of a choice: each key is a parameter,
// a fixed scalar being a choice of one literal.
func (p *parser) parseNested(name string, n *yaml.Node, ss *searchSpace, depth int) ([]plan.Parameter, bool) {
	out := []plan.Parameter{}
	ok := true
	for _, x := range entries(n) {
		if x.val != nil && x.val.Kind == yaml.ScalarNode && !isNull(x.val) {
			pos := nodePos(name, x.key)
			out = append(out, plan.Parameter{Name: x.key.Value, Kind: plan.ParamChoice, Pos: pos,
				Choices: []plan.Choice{{Literal: x.val.Value}}})
			ss.note(x.key.Value, literalType(newScalar(name, x.val)), pos)
			continue
		}
		prm, good := p.parseParam(name, x, ss, depth+1)
		ok = ok && good
		if good {
			out = append(out, prm)
		}
	}
	return out, ok
}

// choiceType is the input type a choice's values share: integer, number,
// boolean, or string when they differ.
func choiceType(tags []string) string {
	all := func(ok func(string) bool) bool {
		for _, t := range tags {
			if !ok(t) {
				return false
			}
		}
		return len(tags) > 0
	}
	switch {
	case all(func(t string) bool { return t == "integer" }):
		return "integer"
	case all(func(t string) bool { return t == "integer" || t == "number" }):
		return "number"
	case all(func(t string) bool { return t == "boolean" }):
		return "boolean"
	}
	return "string"
}

// walkParams calls f for every parameter, nested ones included.
func walkParams(params []plan.Parameter, f func(plan.Parameter)) {
	for _, prm := range params {
		f(prm)
		for _, c := range prm.Choices {
			walkParams(c.Nested, f)
		}
	}
}
