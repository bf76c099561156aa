package compiler

import (
	"path/filepath"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/porch-pipelines/porch/compiler/plan"
)

// The fields of an input, an output, settings: and a job file's header that
// --set changes, as `az ml job create --set` does.
var (
	setInputFields   = []string{"path", "type", "mode", "value"}
	setOutputFields  = []string{"path", "type", "mode"}
	setSettingFields = []string{"force_rerun", "continue_on_step_failure", "default_compute", "default_datastore"}
	setHeaderFields  = []string{"name", "display_name", "experiment_name", "description", "compute"}
)

// SetForms lists the --set keys porch accepts, for messages and help.
const SetForms = "inputs.NAME, inputs.NAME.path|type|mode|value, outputs.NAME.path|type|mode, " +
	"settings.force_rerun|continue_on_step_failure|default_compute|default_datastore, " +
	"jobs.STEP.compute, jobs.STEP.inputs.NAME[.path|type|mode|value], jobs.STEP.outputs.NAME.path|type|mode, " +
	"name, display_name, experiment_name, description, compute, tags.KEY"

// setMark starts the LineComment of every node a --set flag made, which
// then holds the flag ("--set KEY"): nodePos gives it as the node's
// position, so a problem with the value names the flag. Decoded nodes
// never have line 0, so the mark cannot be mistaken for a user's comment.
const setMark = "--set "

// setPos is the position of what --set key gave.
func setPos(key string) plan.Pos { return plan.Pos{File: setMark + key} }

// splitSets separates the root inputs' overrides (inputs.NAME=VALUE,
// which lowering converts to the input's type as before) from the keys
// applied to the YAML tree.
func splitSets(set map[string]string) (inputs, tree map[string]string) {
	for k, v := range set {
		m := &tree
		if path, ok := setPath(k); ok && len(path) == 2 && path[0] == "inputs" {
			m = &inputs
		}
		if *m == nil {
			*m = map[string]string{}
		}
		(*m)[k] = v
	}
	return inputs, tree
}

// setPath is the path of mapping keys a --set key names in the file, and
// whether it is a form porch accepts (SetForms). Input and output names
// may hold dots, as Azure ML allows: a last part that is a field name
// (path, type, mode, value) is the field.
func setPath(key string) ([]string, bool) {
	parts := strings.Split(key, ".")
	if slices.Contains(parts, "") {
		return nil, false
	}
	switch {
	case len(parts) == 1:
		return parts, slices.Contains(setHeaderFields, parts[0])
	case parts[0] == "tags":
		return []string{"tags", strings.TrimPrefix(key, "tags.")}, true
	case parts[0] == "settings":
		return parts, len(parts) == 2 && slices.Contains(setSettingFields, parts[1])
	case parts[0] == "jobs" && len(parts) == 3:
		return parts, parts[2] == "compute"
	case parts[0] == "jobs" && len(parts) > 3:
		io, ok := ioSetPath(parts[2:])
		return append(parts[:2:2], io...), ok
	}
	return ioSetPath(parts)
}

// ioSetPath is setPath for inputs.NAME[.FIELD] and outputs.NAME.FIELD.
func ioSetPath(parts []string) ([]string, bool) {
	n := len(parts)
	fields := map[string][]string{"inputs": setInputFields, "outputs": setOutputFields}[parts[0]]
	switch {
	case fields == nil || n < 2:
		return nil, false
	case n >= 3 && slices.Contains(fields, parts[n-1]):
		return []string{parts[0], strings.Join(parts[1:n-1], "."), parts[n-1]}, true
	}
	// A whole input; an output is set field by field.
	return []string{parts[0], strings.Join(parts[1:], ".")}, parts[0] == "inputs"
}

// applySets writes the --set overrides into a job file's top-level
// mapping, as if the file said so, before it is parsed: every check then
// applies, and problems with a value name its flag. Keys apply in sorted
// order, which puts a field after the input or output it changes.
func (p *parser) applySets(name string, root *yaml.Node, set map[string]string) {
	for _, key := range sortedKeys(set) {
		parts, ok := setPath(key)
		if !ok {
			p.errorf(setPos(key), "porch accepts --set "+SetForms, "%q is not a key porch can set", key)
			continue
		}
		if !p.setTargetExists(name, root, key, parts) {
			continue
		}
		if len(parts) == 3 && parts[0] == "inputs" && hasKey(p.inputSets, "inputs."+parts[1]) {
			p.errorf(setPos(key), "give the input whole (--set inputs."+parts[1]+"=VALUE) or field by field, not both",
				"--set inputs.%s also sets input %q", parts[1], parts[1])
			continue
		}
		value := set[key]
		if n := len(parts); n >= 3 && parts[n-1] == "path" && parts[n-3] == "inputs" {
			value = commandLinePath(value)
		}
		p.setIn(root, key, parts, value)
	}
}

func hasKey(m map[string]string, k string) bool {
	_, ok := m[k]
	return ok
}

// commandLinePath makes a relative local path given on the command line
// absolute against the working folder, as --set inputs.NAME=PATH does;
// URIs, references and bindings stay as they are.
func commandLinePath(v string) string {
	if v == "" || strings.Contains(v, "://") || strings.HasPrefix(v, "azureml:") || strings.Contains(v, "${{") || filepath.IsAbs(v) {
		return v
	}
	if abs, err := filepath.Abs(v); err == nil {
		return abs
	}
	return v
}

// setTargetExists checks that what an override names is in the file: a
// root input or output it changes a field of, a step. A step may gain an
// input or output, as a component declares more than a job binds.
func (p *parser) setTargetExists(name string, root *yaml.Node, key string, parts []string) bool {
	switch parts[0] {
	case "inputs", "outputs":
		what := strings.TrimSuffix(parts[0], "s")
		have := keysOf(lookupVal(root, parts[0]))
		if !slices.Contains(have, parts[1]) {
			p.errorf(setPos(key), withHint("the pipeline declares "+listOr(have, "none"), suggest(parts[1], have)),
				"the pipeline has no %s %q", what, parts[1])
			return false
		}
	case "jobs":
		have := keysOf(lookupVal(root, "jobs"))
		if !slices.Contains(have, parts[1]) {
			p.errorf(setPos(key), withHint("its steps are "+listOr(have, "none"), suggest(parts[1], have)),
				"the pipeline has no step %q", parts[1])
			return false
		}
	}
	return true
}

func lookupVal(n *yaml.Node, key string) *yaml.Node {
	if e := lookup(n, key); e != nil {
		return e.val
	}
	return nil
}

func keysOf(n *yaml.Node) []string {
	var out []string
	for _, e := range entries(n) {
		out = append(out, e.key.Value)
	}
	return out
}

func listOr(names []string, none string) string {
	if len(names) == 0 {
		return none
	}
	return list(names)
}

// setIn sets parts (a path of mapping keys) to value under root, making
// the mappings on the way. It never changes a node shared through an
// anchor: every mapping it goes into is a copy.
func (p *parser) setIn(root *yaml.Node, key string, parts []string, value string) {
	n := root
	for i, k := range parts[:len(parts)-1] {
		child := enterMapping(n, k, key)
		if child == nil {
			// An input written as a scalar gains the field: its value
			// moves to value: (a literal, a binding) or path: (data).
			if i > 0 && parts[i-1] == "inputs" {
				child = inputMapping(n, k, key, parts[len(parts)-1])
			}
		}
		if child == nil {
			p.errorf(setPos(key), "set the whole value, or write a mapping in the YAML",
				"%q is %s in the file, not a mapping", k, kindName(lookupVal(n, k)))
			return
		}
		n = child
	}
	putEntry(n, parts[len(parts)-1], setScalar(key, value, parts[len(parts)-1] == "path"), key)
}

// enterMapping returns a copy of the mapping at key k of n, put in its
// place, a new mapping when k is absent or null, or nil when k holds
// something else.
func enterMapping(n *yaml.Node, k, key string) *yaml.Node {
	v := lookupVal(n, k)
	switch {
	case isNull(v):
		v = &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", LineComment: setMark + key}
	case v.Kind == yaml.MappingNode:
		c := *v
		c.Content = slices.Clone(v.Content)
		v = &c
	default:
		return nil
	}
	putEntry(n, k, v, key)
	return v
}

// inputMapping turns an input written as a scalar into a mapping that
// keeps its value, under path: when field is a data field.
func inputMapping(n *yaml.Node, k, key, field string) *yaml.Node {
	v := lookupVal(n, k)
	if v == nil || v.Kind != yaml.ScalarNode {
		return nil
	}
	as := "value"
	if field == "path" || field == "mode" {
		as = "path"
	}
	m := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Line: v.Line, Column: v.Column,
		Content: []*yaml.Node{{Kind: yaml.ScalarNode, Tag: "!!str", Value: as, Line: v.Line, Column: v.Column}, v}}
	putEntry(n, k, m, key)
	return m
}

// putEntry sets k to v in mapping n: in place of a key n holds itself, or
// as a new entry (which also wins over one merged in with <<).
func putEntry(n *yaml.Node, k string, v *yaml.Node, key string) {
	for i := 0; i+1 < len(n.Content); i += 2 {
		if kn := n.Content[i]; kn.Value == k && kn.Tag != "!!merge" {
			n.Content[i+1] = v
			return
		}
	}
	kn := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: k, LineComment: setMark + key}
	n.Content = append(n.Content, kn, v)
}

// setScalar is a --set value as YAML would read it written plain: True,
// 3 and 0.5 keep their types (a path is always a string).
func setScalar(key, value string, isPath bool) *yaml.Node {
	n := &yaml.Node{Kind: yaml.ScalarNode, Value: value, LineComment: setMark + key}
	n.Tag = n.ShortTag()
	if isPath || n.Tag == "!!null" || n.Tag == "!!merge" {
		n.Tag = "!!str"
	}
	return n
}
