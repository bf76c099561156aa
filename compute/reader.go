package compute

import (
	"fmt"
	"math/big"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/porch-pipelines/porch/compiler"
	"github.com/porch-pipelines/porch/compiler/plan"
)

// reader walks one file's node tree, collecting diagnostics whose summary
// starts with the field path they are about.
type reader struct {
	file  string
	diags compiler.Diagnostics
	// bad holds the fields already reported, so that a rule checked again
	// on the parsed value is not reported twice.
	bad map[string]bool
}

func newReader(file string) *reader {
	return &reader{file: file, bad: map[string]bool{}}
}

func (r *reader) pos(n *yaml.Node) plan.Pos {
	if n == nil {
		return plan.Pos{File: r.file}
	}
	return plan.Pos{File: r.file, Line: n.Line, Col: n.Column}
}

func (r *reader) report(sev compiler.Severity, n *yaml.Node, field, detail, format string, args ...any) {
	summary := fmt.Sprintf(format, args...)
	if field != "" {
		summary = field + ": " + summary
		if sev == compiler.Error {
			r.bad[field] = true
		}
	}
	r.diags = append(r.diags, compiler.Diagnostic{Pos: r.pos(n), Severity: sev, Summary: summary, Detail: detail})
}

func (r *reader) errorf(n *yaml.Node, field, detail, format string, args ...any) {
	r.report(compiler.Error, n, field, detail, format, args...)
}

func (r *reader) warnf(n *yaml.Node, field, detail, format string, args ...any) {
	r.report(compiler.Warning, n, field, detail, format, args...)
}

// problems reports the rules a parsed entry breaks at the node of the
// field each is about (or the nearest reported parent), skipping fields
// already reported while parsing.
func (r *reader) problems(ps []plan.Problem, prefix string, at map[string]*yaml.Node, fallback *yaml.Node) {
	for _, p := range ps {
		field := prefix + p.Field
		if r.bad[field] {
			continue
		}
		n := at[p.Field]
		if n == nil {
			n = fallback
		}
		r.errorf(n, field, p.Detail, "%s", p.Summary)
	}
}

// entry is one key: value pair of a mapping.
type entry struct {
	key, val *yaml.Node
}

// mapping returns a mapping's entries by key. Keys not in known are
// errors when strict (Kubernetes refuses unknown fields) and warnings
// otherwise (Azure ML ignores them), with a did-you-mean either way. A
// value that is not a mapping is an error, and nil comes back.
func (r *reader) mapping(n *yaml.Node, field string, known []string, strict bool) map[string]entry {
	n = deref(n)
	if n == nil || compiler.IsNull(n) {
		return map[string]entry{}
	}
	if n.Kind != yaml.MappingNode {
		r.errorf(n, field, "write key: value pairs under it", "expected a mapping, found %s", compiler.KindName(n))
		return nil
	}
	out := map[string]entry{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], deref(n.Content[i+1])
		if known != nil && !slices.Contains(known, k.Value) {
			hint := compiler.Suggest(k.Value, known)
			where := ""
			if field != "" {
				where = " in " + field
			}
			if strict {
				r.errorf(k, "", withHint(hint, "remove it: Kubernetes refuses unknown fields (known here: "+strings.Join(known, ", ")+")"),
					"unknown field %q%s", k.Value, where)
			} else {
				r.warnf(k, "", withHint(hint, "porch ignores it, as Azure ML does"), "unknown key %q%s", k.Value, where)
			}
			continue
		}
		out[k.Value] = entry{key: k, val: v}
	}
	return out
}

// withHint puts a did-you-mean before the detail.
func withHint(hint, detail string) string {
	if hint == "" {
		return detail
	}
	return hint + " " + detail
}

// str returns a scalar's value, "" for an absent or null one.
func (r *reader) str(e entry, field string) string {
	if e.val == nil || compiler.IsNull(e.val) {
		return ""
	}
	if e.val.Kind != yaml.ScalarNode {
		r.errorf(e.val, field, "write a single value", "expected a string, found %s", compiler.KindName(e.val))
		return ""
	}
	return strings.TrimSpace(e.val.Value)
}

// integer returns a whole number, def when absent. Azure ML takes one
// written as a string too ("3").
func (r *reader) integer(e entry, field string, def int) int {
	s := r.str(e, field)
	if s == "" {
		return def
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		r.errorf(e.val, field, "write a whole number such as 4", "expected a whole number, found %q", s)
		return def
	}
	return n
}

// boolean checks a true/false value.
func (r *reader) boolean(e entry, field string) {
	s := r.str(e, field)
	if s == "" {
		return
	}
	if _, err := strconv.ParseBool(s); err != nil {
		r.errorf(e.val, field, "write true or false", "expected true or false, found %q", s)
	}
}

// labels reads a mapping of strings (a nodeSelector, tags) in file order,
// keeping each key's node under path.key in at.
func (r *reader) labels(e entry, field string, at map[string]*yaml.Node) []plan.Label {
	var out []plan.Label
	m := deref(e.val)
	if r.mapping(m, field, nil, false) == nil || m == nil {
		return nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := m.Content[i], m.Content[i+1]
		path := join(field, k.Value)
		val := r.str(entry{key: k, val: v}, path)
		if at != nil {
			at[path] = k
		}
		out = append(out, plan.Label{Key: k.Value, Value: val})
	}
	return out
}

// quantity reads a resource quantity, reporting where it is not one.
func (r *reader) quantity(e entry, field string) (*big.Rat, bool) {
	if e.val == nil || compiler.IsNull(e.val) {
		return nil, false
	}
	if e.val.Kind != yaml.ScalarNode {
		r.errorf(e.val, field, "write a quantity such as 500m, 2 or 1Gi", "expected a quantity, found %s", compiler.KindName(e.val))
		return nil, false
	}
	q, err := ParseQuantity(strings.TrimSpace(e.val.Value))
	if err != nil {
		r.errorf(e.val, field, "write a Kubernetes quantity such as 500m, 2, 1500Mi, 2Gi or 1e3", "not a quantity: %v", err)
		return nil, false
	}
	return q, true
}

func join(prefix, key string) string {
	if prefix == "" {
		return key
	}
	if strings.ContainsAny(key, "./") {
		return prefix + "[" + key + "]"
	}
	return prefix + "." + key
}

func deref(n *yaml.Node) *yaml.Node {
	for i := 0; n != nil && n.Kind == yaml.AliasNode && i < 100; i++ {
		n = n.Alias
	}
	return n
}
