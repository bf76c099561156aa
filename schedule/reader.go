package schedule

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/porch-pipelines/porch/compiler"
	"github.com/porch-pipelines/porch/compiler/plan"
)

// reader walks a schedule file's node tree, collecting diagnostics whose
// summary starts with the field they are about.
type reader struct {
	file  string
	diags compiler.Diagnostics
}

// setMark starts the LineComment of a node a --set flag made; the rest
// is the flag's key, which stands for its position.
const setMark = "--set "

func (r *reader) pos(n *yaml.Node) plan.Pos {
	if n == nil {
		return plan.Pos{File: r.file}
	}
	if n.Line == 0 && strings.HasPrefix(n.LineComment, setMark) {
		return plan.Pos{File: n.LineComment}
	}
	return plan.Pos{File: r.file, Line: n.Line, Col: n.Column}
}

// valuePos is the position of the byte at offset in a scalar's value: a
// quoted scalar's value starts after its quote. Offsets into block
// scalars and escaped text are approximate; the line is right.
func (r *reader) valuePos(n *yaml.Node, offset int) plan.Pos {
	p := r.pos(n)
	if p.Line == 0 {
		return p
	}
	if n.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle) != 0 {
		offset++
	}
	p.Col += offset
	return p
}

func (r *reader) report(sev compiler.Severity, pos plan.Pos, field, detail, format string, args ...any) {
	summary := fmt.Sprintf(format, args...)
	if field != "" {
		summary = field + ": " + summary
	}
	r.diags = append(r.diags, compiler.Diagnostic{Pos: pos, Severity: sev, Summary: summary, Detail: detail})
}

func (r *reader) errorf(n *yaml.Node, field, detail, format string, args ...any) {
	r.report(compiler.Error, r.pos(n), field, detail, format, args...)
}

func (r *reader) warnf(n *yaml.Node, field, detail, format string, args ...any) {
	r.report(compiler.Warning, r.pos(n), field, detail, format, args...)
}

// entry is one key: value pair of a mapping.
type entry struct {
	key, val *yaml.Node
}

// present says whether the key was written with a value that is not null.
func (e entry) present() bool { return e.key != nil && e.val != nil && !compiler.IsNull(e.val) }

// mapping returns a mapping's entries by key. A key not in known is an
// error when strict and a warning otherwise, with a did-you-mean. A
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
			where := ""
			if field != "" {
				where = " in " + field
			}
			hint := compiler.Suggest(k.Value, known)
			if strict {
				r.errorf(k, "", withHint(hint, "the keys here are "+strings.Join(known, ", ")), "unknown key %q%s", k.Value, where)
			} else {
				r.warnf(k, "", withHint(hint, "porch ignores it"), "unknown key %q%s", k.Value, where)
			}
			continue
		}
		out[k.Value] = entry{key: k, val: v}
	}
	return out
}

func withHint(hint, detail string) string {
	if hint == "" {
		return detail
	}
	return hint + " " + detail
}

// str returns a scalar's value, "" for an absent or null one.
func (r *reader) str(e entry, field string) string {
	if !e.present() {
		return ""
	}
	if e.val.Kind != yaml.ScalarNode {
		r.errorf(e.val, field, "write a single value", "expected a string, found %s", compiler.KindName(e.val))
		return ""
	}
	return strings.TrimSpace(e.val.Value)
}

// integer returns a whole number in [lo, hi], def when absent; ok is
// false when it was reported.
func (r *reader) integer(e entry, field string, def, lo, hi int) (int, bool) {
	s := r.str(e, field)
	if s == "" {
		return def, e.val == nil || compiler.IsNull(e.val) || e.val.Kind == yaml.ScalarNode
	}
	return r.number(e.val, s, field, lo, hi)
}

func (r *reader) number(n *yaml.Node, s, field string, lo, hi int) (int, bool) {
	v, err := strconv.Atoi(s)
	if err != nil {
		r.errorf(n, field, fmt.Sprintf("write a whole number from %d to %d", lo, hi), "expected a whole number, found %q", s)
		return 0, false
	}
	if v < lo || v > hi {
		r.errorf(n, field, fmt.Sprintf("write a whole number from %d to %d", lo, hi), "%d is out of range", v)
		return 0, false
	}
	return v, true
}

// scalars returns a scalar or a list of scalars as (value, node) pairs,
// as Azure ML takes hours: 4 and hours: [4, 5] alike.
func (r *reader) scalars(e entry, field string) ([]string, []*yaml.Node) {
	if !e.present() {
		return nil, nil
	}
	items := []*yaml.Node{e.val}
	if e.val.Kind == yaml.SequenceNode {
		items = e.val.Content
	}
	var vals []string
	var nodes []*yaml.Node
	for _, n := range items {
		n = deref(n)
		if n.Kind != yaml.ScalarNode {
			r.errorf(n, field, "write a value or a list of values, such as [4, 5]", "expected a value, found %s", compiler.KindName(n))
			continue
		}
		vals = append(vals, strings.TrimSpace(n.Value))
		nodes = append(nodes, n)
	}
	return vals, nodes
}

// labels reads a mapping of strings (tags) in file order.
func (r *reader) labels(e entry, field string) map[string]string {
	m := deref(e.val)
	if !e.present() || r.mapping(m, field, nil, false) == nil {
		return nil
	}
	out := map[string]string{}
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := m.Content[i], m.Content[i+1]
		out[k.Value] = r.str(entry{key: k, val: deref(v)}, field+"."+k.Value)
	}
	return out
}

func deref(n *yaml.Node) *yaml.Node {
	for i := 0; n != nil && n.Kind == yaml.AliasNode && i < 100; i++ {
		n = n.Alias
	}
	return n
}

func compilerSuggest(s string, candidates []string) string { return compiler.Suggest(s, candidates) }
