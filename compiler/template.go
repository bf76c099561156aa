package compiler

import (
	"slices"
	"strings"

	"github.com/porch-pipelines/porch/compiler/plan"
)

const bindingHelp = "write ${{parent.inputs.<name>}}, ${{parent.outputs.<name>}}, ${{parent.jobs.<step>.outputs.<name>}} or ${{parent.jobs.<step>.inputs.<name>}}"

// parseTemplate splits a command line into text, ${{...}} references and
// $[[...]] optional groups.
func (p *parser) parseTemplate(s *scalarAST) (plan.Template, []plan.Pos) {
	p.refPos, p.searchRefs = nil, nil
	parts, _ := p.templateParts(s, s.Value, 0, false)
	return plan.Template{Source: s.Value, Parts: parts}, p.refPos
}

// templateParts parses src (which starts at offset within s.Value). Inside
// an optional group it stops at "]]" and returns how much it consumed.
func (p *parser) templateParts(s *scalarAST, src string, offset int, inGroup bool) ([]plan.Part, int) {
	var parts []plan.Part
	var text strings.Builder
	flush := func() {
		if text.Len() > 0 {
			parts = append(parts, plan.Part{Text: text.String()})
			text.Reset()
		}
	}
	i := 0
	for i < len(src) {
		switch {
		case strings.HasPrefix(src[i:], "${{"):
			end := strings.Index(src[i+3:], "}}")
			if end < 0 {
				p.errorf(posAt(s, offset+i), "close the reference with }}", "unterminated ${{ in command")
				return parts, len(src)
			}
			flush()
			if ref := p.commandRef(s, src[i+3:i+3+end], offset+i); ref != nil {
				parts = append(parts, plan.Part{Ref: ref})
				p.refPos = append(p.refPos, posAt(s, offset+i))
			}
			i += 3 + end + 2
		case strings.HasPrefix(src[i:], "$[[") && !inGroup:
			flush()
			group, n := p.templateParts(s, src[i+3:], offset+i+3, true)
			if i+3+n > len(src) || !strings.HasPrefix(src[i+3+n:], "]]") {
				p.errorf(posAt(s, offset+i), "close the optional group with ]]", "unterminated $[[ in command")
				return parts, len(src)
			}
			if group == nil {
				group = []plan.Part{}
			}
			parts = append(parts, plan.Part{Optional: group})
			i += 3 + n + 2
		case inGroup && strings.HasPrefix(src[i:], "]]"):
			flush()
			return parts, i
		case p.sweepRefs && strings.HasPrefix(src[i:], legacySearchPrefix):
			n, ref := p.legacySearchRef(s, src[i:], offset+i)
			if ref == nil {
				text.WriteString(src[i : i+n])
				i += n
				continue
			}
			flush()
			parts = append(parts, plan.Part{Ref: ref})
			p.refPos = append(p.refPos, posAt(s, offset+i))
			i += n
		default:
			text.WriteByte(src[i])
			i++
		}
	}
	flush()
	if inGroup {
		return parts, len(src) + 1
	}
	return parts, i
}

// commandRef parses the inside of a ${{...}} in a command.
func (p *parser) commandRef(s *scalarAST, body string, offset int) *plan.Ref {
	expr := strings.TrimSpace(body)
	segs := strings.Split(expr, ".")
	for i := range segs {
		segs[i] = strings.TrimSpace(segs[i])
	}
	switch {
	case len(segs) == 1 && segs[0] == "name":
		return &plan.Ref{Kind: plan.RefName}
	case len(segs) == 1 && segs[0] == "default_datastore":
		return &plan.Ref{Kind: plan.RefDefaultDatastore}
	case len(segs) >= 2 && segs[0] == "inputs" && !slices.Contains(segs[1:], ""):
		return &plan.Ref{Kind: plan.RefInput, Name: strings.Join(segs[1:], ".")}
	case len(segs) == 2 && segs[0] == "outputs" && segs[1] != "":
		return &plan.Ref{Kind: plan.RefOutput, Name: segs[1]}
	case p.sweepRefs && len(segs) == 2 && segs[0] == "search_space" && segs[1] != "":
		p.searchRefs = append(p.searchRefs, searchRef{Name: segs[1], Pos: posAt(s, offset)})
		return &plan.Ref{Kind: plan.RefInput, Name: segs[1]}
	case segs[0] == "parent":
		p.errorf(posAt(s, offset), "bind it as a step input (inputs: {x: ${{"+expr+"}}}) and write ${{inputs.x}} in the command",
			"a command cannot use %q directly", "${{"+expr+"}}")
	default:
		p.errorf(posAt(s, offset), "write ${{inputs.<name>}}, ${{outputs.<name>}}, ${{name}} or ${{default_datastore}}",
			"unknown reference %q in command", "${{"+expr+"}}")
	}
	return nil
}

// parseBinding parses a value that is one ${{parent...}} binding.
func (p *parser) parseBinding(s *scalarAST) *refAST {
	v := strings.TrimSpace(s.Value)
	start := strings.Index(v, "${{")
	end := strings.Index(v, "}}")
	if end < 0 {
		p.errorf(posAt(s, strings.Index(s.Value, "${{")), "close the binding with }}", "unterminated ${{ in %q", s.Value)
		return nil
	}
	if start != 0 || end != len(v)-2 || strings.Count(v, "${{") != 1 {
		p.errorf(s.Pos, "a ${{...}} binding must be the whole value; "+bindingHelp, "binding %q mixes a reference with other text", s.Value)
		return nil
	}
	expr := strings.TrimSpace(v[3 : len(v)-2])
	segs := strings.Split(expr, ".")
	for i := range segs {
		segs[i] = strings.TrimSpace(segs[i])
		if segs[i] == "" {
			segs = nil
			break
		}
	}
	ref := &refAST{Text: "${{" + strings.Join(segs, ".") + "}}", Pos: s.Pos}
	switch {
	case len(segs) >= 3 && segs[0] == "parent" && segs[1] == "inputs":
		// A dotted name is a parameter group's member, as Azure ML
		// flattens it: the checker finds it declared so, or says porch
		// has no parameter groups.
		ref.Kind, ref.Name = refParentInput, strings.Join(segs[2:], ".")
	case len(segs) == 3 && segs[0] == "parent" && segs[1] == "outputs":
		ref.Kind, ref.Name = refParentOutput, segs[2]
	case len(segs) == 5 && segs[0] == "parent" && segs[1] == "jobs" && segs[3] == "outputs":
		ref.Kind, ref.Step, ref.Name = refStepOutput, segs[2], segs[4]
	case len(segs) >= 5 && segs[0] == "parent" && segs[1] == "jobs" && segs[3] == "inputs":
		ref.Kind, ref.Step, ref.Name = refStepInput, segs[2], strings.Join(segs[4:], ".")
	default:
		p.errorf(s.Pos, bindingHelp, "invalid binding %q", s.Value)
		return nil
	}
	return ref
}

// normalizePath rewrites the ${{name}} and ${{default_datastore}} of an
// output path to exactly that spelling and ${{output_name}} to the output's
// name. Anything else inside ${{...}} is an error.
func (p *parser) normalizePath(s *scalarAST, output string) string {
	var b strings.Builder
	v := s.Value
	for {
		i := strings.Index(v, "${{")
		if i < 0 {
			b.WriteString(v)
			return b.String()
		}
		b.WriteString(v[:i])
		j := strings.Index(v[i:], "}}")
		if j < 0 {
			p.errorf(s.Pos, "close the reference with }}", "unterminated ${{ in output path %q", s.Value)
			return s.Value
		}
		switch expr := strings.TrimSpace(v[i+3 : i+j]); expr {
		case "name", "default_datastore":
			b.WriteString("${{" + expr + "}}")
		case "output_name":
			b.WriteString(output)
		default:
			p.errorf(s.Pos, "an output path may hold only ${{name}}, ${{default_datastore}} and ${{output_name}}",
				"unknown reference %q in output path", "${{"+expr+"}}")
		}
		v = v[i+j+2:]
	}
}

// legacySearchPrefix starts the older {search_space.x} form of a sweep
// parameter reference.
const legacySearchPrefix = "{search_space."

// legacySearchRef parses a {search_space.x} at the start of src, which
// starts at offset within s.Value, and returns how many bytes it spans. A
// brace that does not close a name is text, and the ref is nil.
//
// It looks no further than the first byte that ends the name, a "{" at
// the latest, so the next {search_space. is never before where it stopped
// and a command is read once however many unclosed ones it holds.
func (p *parser) legacySearchRef(s *scalarAST, src string, offset int) (int, *plan.Ref) {
	rest := src[len(legacySearchPrefix):]
	end := strings.IndexAny(rest, "}{.$")
	if end < 0 || rest[end] != '}' {
		return len(legacySearchPrefix), nil
	}
	name := strings.TrimSpace(rest[:end])
	if name == "" || strings.Contains(name, " ") {
		return len(legacySearchPrefix), nil
	}
	end += len(legacySearchPrefix)
	p.searchRefs = append(p.searchRefs, searchRef{Name: name, Pos: posAt(s, offset)})
	return end + 1, &plan.Ref{Kind: plan.RefInput, Name: name}
}
