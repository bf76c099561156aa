package sweep

import (
	"encoding/json"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/porch-pipelines/porch/compiler/plan"
)

// Assignment is one trial's parameter values, in name order. A choice whose
// sampled value is a dict adds one Value per entry, named by its key; the
// choice's own Value is the dict as a JSON object of the entries' texts.
type Assignment []Value

// Value is one parameter's value in a trial.
type Value struct {
	// Name is the parameter's name (or a dict entry's key).
	Name string `json:"name"`
	// Text is the value as it goes on a command line: "0.01", "adam", "3".
	Text string `json:"text"`
	// Number is the value as a number when IsNumber is set.
	Number   float64 `json:"number"`
	IsNumber bool    `json:"is_number"`
}

// Get returns the value named name, and whether the assignment has it.
func (a Assignment) Get(name string) (Value, bool) {
	for _, v := range a {
		if v.Name == name {
			return v, true
		}
	}
	return Value{}, false
}

// Map returns the assignment as name -> text, the form a trial's inputs
// bind from.
func (a Assignment) Map() map[string]string {
	m := make(map[string]string, len(a))
	for _, v := range a {
		m[v.Name] = v.Text
	}
	return m
}

// param is a search-space parameter with its place in the flattened space:
// every parameter, nested ones included, owns one dimension, so a trial's
// point is a vector whether or not a branch is active in it.
type param struct {
	plan.Parameter
	dim int
	// nested holds, per choice value, its entries sorted by name (nil for a
	// scalar value).
	nested [][]*param
}

// space is a validated search space.
type space struct {
	params []*param
	ndims  int
	// base is the logbase of the log forms (e by default).
	base float64
}

// newSpace builds the flattened space; the parameters must be valid.
func newSpace(ps []plan.Parameter, base float64) *space {
	s := &space{base: base}
	s.params = s.flatten(ps)
	return s
}

func (s *space) flatten(ps []plan.Parameter) []*param {
	sorted := append([]plan.Parameter(nil), ps...)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })
	out := make([]*param, len(sorted))
	for i, p := range sorted {
		q := &param{Parameter: p, dim: s.ndims}
		s.ndims++
		if p.Kind == plan.ParamChoice {
			q.nested = make([][]*param, len(p.Choices))
			for j, c := range p.Choices {
				if c.Nested != nil {
					q.nested[j] = s.flatten(c.Nested)
				}
			}
		}
		out[i] = q
	}
	return out
}

// fromUnit maps u in [0, 1) to the parameter's underlying coordinate: a
// choice's index, randint's integer, the uniform forms' value (the exponent
// for loguniform) or the normal forms' value (the exponent for lognormal),
// before any q-rounding.
func (p *param) fromUnit(u float64) float64 {
	switch p.Kind {
	case plan.ParamChoice:
		return math.Min(math.Floor(u*float64(len(p.Choices))), float64(len(p.Choices)-1))
	case plan.ParamRandint:
		return math.Min(math.Floor(u*float64(p.Upper)), float64(p.Upper-1))
	case plan.ParamNormal, plan.ParamLogNormal, plan.ParamQNormal, plan.ParamQLogNormal:
		return p.Mu + p.Sigma*normalQuantile(u)
	default:
		return p.Min + u*(p.Max-p.Min)
	}
}

// normalQuantile is the standard normal's inverse CDF, with u kept inside
// (0, 1) so that a draw of exactly 0 stays finite.
func normalQuantile(u float64) float64 {
	const tiny = 1.0 / (1 << 53)
	u = math.Min(math.Max(u, tiny), 1-tiny)
	return math.Sqrt2 * math.Erfinv(2*u-1)
}

// assign renders the point x (one coordinate per dimension, as fromUnit
// returns them) as an assignment; dimensions of inactive branches are
// ignored.
func (s *space) assign(x []float64) Assignment {
	var a Assignment
	s.assignParams(s.params, x, &a)
	sort.SliceStable(a, func(i, j int) bool { return a[i].Name < a[j].Name })
	return a
}

func (s *space) assignParams(ps []*param, x []float64, a *Assignment) {
	for _, p := range ps {
		if p.Kind != plan.ParamChoice {
			*a = append(*a, s.numberValue(p, x[p.dim]))
			continue
		}
		i := int(x[p.dim])
		if p.nested == nil || p.nested[i] == nil {
			*a = append(*a, literalValue(p.Name, p.Choices[i].Literal))
			continue
		}
		var entries Assignment
		s.assignParams(p.nested[i], x, &entries)
		*a = append(*a, dictValue(p.Name, entries))
		*a = append(*a, entries...)
	}
}

// numberValue renders a numeric parameter's coordinate.
func (s *space) numberValue(p *param, x float64) Value {
	switch p.Kind {
	case plan.ParamRandint:
		return Value{Name: p.Name, Text: strconv.Itoa(int(x)), Number: x, IsNumber: true}
	case plan.ParamLogUniform, plan.ParamLogNormal, plan.ParamQLogUniform, plan.ParamQLogNormal:
		x = math.Pow(s.base, x)
	}
	switch p.Kind {
	case plan.ParamQUniform, plan.ParamQLogUniform, plan.ParamQNormal, plan.ParamQLogNormal:
		return qValue(p.Name, x, p.Q)
	}
	return Value{Name: p.Name, Text: formatFloat(x), Number: x, IsNumber: true}
}

// qValue is round(x/q)*q, cleaned of binary noise at q's decimals and
// written in its shortest form, so that q = 0.1 gives "0.3" rather than
// "0.30000000000000004" and an integral q gives an integer ("3", which
// argparse's type=int accepts).
func qValue(name string, x, q float64) Value {
	v := math.Round(x/q) * q
	decimals := 0
	if qs := strconv.FormatFloat(q, 'f', -1, 64); strings.Contains(qs, ".") {
		decimals = len(qs) - strings.Index(qs, ".") - 1
	}
	if scale := math.Pow(10, float64(decimals)); decimals <= 15 && math.Abs(v*scale) < 1<<53 {
		v = math.Round(v*scale) / scale
	}
	if v == 0 {
		v = 0 // no "-0"
	}
	return Value{Name: name, Text: strconv.FormatFloat(v, 'f', -1, 64), Number: v, IsNumber: true}
}

func formatFloat(x float64) string {
	return strconv.FormatFloat(x, 'g', -1, 64)
}

// literalValue is a choice's scalar value; it is a number when it reads as
// a finite one.
func literalValue(name, lit string) Value {
	v := Value{Name: name, Text: lit}
	if f, err := strconv.ParseFloat(strings.TrimSpace(lit), 64); err == nil && !math.IsInf(f, 0) && !math.IsNaN(f) {
		v.Number, v.IsNumber = f, true
	}
	return v
}

// dictValue is a dict choice's own value: its entries as a JSON object.
func dictValue(name string, entries Assignment) Value {
	m := make(map[string]string, len(entries))
	for _, e := range entries {
		m[e.Name] = e.Text
	}
	b, _ := json.Marshal(m) // a map of strings always marshals; keys come out sorted
	return Value{Name: name, Text: string(b)}
}

// coordinates reads an observed assignment back into a point: NaN marks a
// dimension that is inactive (or that the assignment does not match, such
// as a value from an edited search space).
func (s *space) coordinates(a Assignment) []float64 {
	x := make([]float64, s.ndims)
	for i := range x {
		x[i] = math.NaN()
	}
	s.readParams(s.params, a, x)
	return x
}

func (s *space) readParams(ps []*param, a Assignment, x []float64) {
	for _, p := range ps {
		v, ok := a.Get(p.Name)
		if !ok {
			continue
		}
		if p.Kind != plan.ParamChoice {
			if v.IsNumber {
				x[p.dim] = v.Number
			}
			continue
		}
		i := p.matchChoice(v, a)
		if i < 0 {
			continue
		}
		x[p.dim] = float64(i)
		if p.nested != nil && p.nested[i] != nil {
			s.readParams(p.nested[i], a, x)
		}
	}
}

// matchChoice returns the index of the choice value v is, or -1. A dict
// value matches when the assignment has all its entries and the fixed ones
// agree.
func (p *param) matchChoice(v Value, a Assignment) int {
	for i, c := range p.Choices {
		if c.Nested == nil {
			if c.Literal == v.Text {
				return i
			}
			continue
		}
		if dictMatches(c.Nested, a) {
			return i
		}
	}
	return -1
}

func dictMatches(entries []plan.Parameter, a Assignment) bool {
	for _, e := range entries {
		v, ok := a.Get(e.Name)
		if !ok {
			return false
		}
		fixed := e.Kind == plan.ParamChoice && len(e.Choices) == 1 && e.Choices[0].Nested == nil
		if fixed && e.Choices[0].Literal != v.Text {
			return false
		}
	}
	return true
}
