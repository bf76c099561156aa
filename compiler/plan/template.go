package plan

import "strings"

// Template is a command line split into literal text and references. It is
// parsed and checked at compile time and rendered on the worker.
type Template struct {
	// Source is the command as written.
	Source string `json:"source"`
	Parts  []Part `json:"parts"`
}

// RefKind names what a template reference points at.
type RefKind string

// Reference kinds.
const (
	RefInput            RefKind = "inputs"
	RefOutput           RefKind = "outputs"
	RefName             RefKind = "name"
	RefDefaultDatastore RefKind = "default_datastore"
)

// Part is literal text, a reference, or an optional group.
type Part struct {
	Text string `json:"text,omitempty"`
	// Ref is set for a ${{...}} reference.
	Ref *Ref `json:"ref,omitempty"`
	// Optional is the content of a $[[...]] group: dropped whole when any
	// input it references is unset.
	Optional []Part `json:"optional,omitempty"`
}

// Ref is a ${{...}} reference inside a command.
type Ref struct {
	Kind RefKind `json:"kind"`
	// Name is the input or output name (empty for name and
	// default_datastore).
	Name string `json:"name,omitempty"`
}

// Render substitutes references. lookup returns a reference's value and
// whether it is set; an optional group whose references are not all set is
// dropped, and an unset reference outside a group renders as "".
func (t Template) Render(lookup func(Ref) (string, bool)) string {
	var b strings.Builder
	renderParts(&b, t.Parts, lookup)
	return b.String()
}

func renderParts(b *strings.Builder, parts []Part, lookup func(Ref) (string, bool)) {
	for _, p := range parts {
		switch {
		case p.Ref != nil:
			v, _ := lookup(*p.Ref)
			b.WriteString(v)
		case p.Optional != nil:
			if allSet(p.Optional, lookup) {
				renderParts(b, p.Optional, lookup)
			}
		default:
			b.WriteString(p.Text)
		}
	}
}

func allSet(parts []Part, lookup func(Ref) (string, bool)) bool {
	for _, p := range parts {
		if p.Ref != nil {
			if _, ok := lookup(*p.Ref); !ok {
				return false
			}
		}
		if p.Optional != nil && !allSet(p.Optional, lookup) {
			return false
		}
	}
	return true
}
