// Package doccheck reads porch's markdown documentation the way its tests
// check it: the code blocks, with the doctest markers that say which of them
// the documentation test runs, the links and the headings' anchors.
//
// A marker is an HTML comment, which renders as nothing:
//
//	<!-- doctest: run [fails] [output] [CONDITION] -->  run the next code block
//	<!-- doctest: skip REASON -->                        do not run it, and say why
//	<!-- doctest: file NAME -->                          the next block is a file the examples use
//	<!-- doctest: check -->                              only the lines below: hidden checks
//
// Lines after the first, up to the closing "-->", are testscript lines that
// run after the block (a run's, a check's): stdout assertions, a curl.
package doccheck

import (
	"bytes"
	"fmt"
	"strings"
	"unicode"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/text"
)

// Page is one markdown file, read.
type Page struct {
	Path    string
	Blocks  []Block         // every code block, in order
	Steps   []Step          // the markers, in order, each with its block
	Links   []Link          // every link and image, in order
	Anchors map[string]bool // the anchors its headings make, as GitHub makes them
}

// Block is a fenced or indented code block.
type Block struct {
	Line   int    // the line of its first content line, from 1
	Lang   string // a fenced block's language, else ""
	Text   string // its content, indentation removed
	Marked bool   // a marker stands right before it
}

// Marker is a doctest comment.
type Marker struct {
	Line int
	Kind string   // run, skip, file or check
	Args []string // the words after the kind
	Body []string // the lines after the first, testscript to run after the block
}

// Step is a marker and the code block it stands before (none for check).
type Step struct {
	Marker Marker
	Block  *Block
}

// Link is a link's or an image's destination.
type Link struct {
	Line int
	Dest string
}

const markerPrefix = "<!-- doctest"

// Parse reads a markdown file. A marker that is not understood, or that
// stands before no code block when it needs one, is an error naming its line.
func Parse(path string, src []byte) (*Page, error) {
	doc := goldmark.New().Parser().Parse(text.NewReader(src))
	r := &reader{
		page:      &Page{Path: path, Anchors: map[string]bool{}},
		src:       src,
		lines:     newLineIndex(src),
		slugs:     map[string]int{},
		stepBlock: map[int]int{},
	}
	r.walk(doc)
	for s, b := range r.stepBlock {
		r.page.Steps[s].Block = &r.page.Blocks[b]
	}
	if len(r.errs) > 0 {
		return r.page, fmt.Errorf("%s", strings.Join(r.errs, "\n"))
	}
	return r.page, nil
}

// reader walks a document's tree once, in order.
type reader struct {
	page      *Page
	src       []byte
	lines     lineIndex
	slugs     map[string]int // how many headings made each slug
	pending   *Marker        // a marker waiting for its code block
	stepBlock map[int]int    // step index -> block index
	errs      []string
}

func (r *reader) walk(n ast.Node) {
	for c := n.FirstChild(); c != nil; c = c.NextSibling() {
		if !isCode(c) {
			r.stray()
		}
		if r.visit(c) {
			r.walk(c)
		}
	}
	r.stray()
}

// visit takes in one node; it says whether to look into its children.
func (r *reader) visit(c ast.Node) bool {
	p := r.page
	switch c := c.(type) {
	case *ast.HTMLBlock:
		m, ok, err := parseMarker(c, r.src, r.lines)
		if err != nil {
			r.errs = append(r.errs, fmt.Sprintf("%s:%v", p.Path, err))
		}
		if ok && m.Kind == "check" {
			p.Steps = append(p.Steps, Step{Marker: m})
		} else if ok {
			r.pending = &m
		}
		return false
	case *ast.FencedCodeBlock, *ast.CodeBlock:
		b := codeBlock(c, r.src, r.lines)
		b.Marked = r.pending != nil
		p.Blocks = append(p.Blocks, b)
		if r.pending != nil {
			r.stepBlock[len(p.Steps)] = len(p.Blocks) - 1
			p.Steps = append(p.Steps, Step{Marker: *r.pending})
			r.pending = nil
		}
		return false
	case *ast.Heading:
		slug := Slug(inlineText(c, r.src))
		if k := r.slugs[slug]; k > 0 {
			p.Anchors[fmt.Sprintf("%s-%d", slug, k)] = true
		} else {
			p.Anchors[slug] = true
		}
		r.slugs[slug]++
	case *ast.Link:
		p.Links = append(p.Links, Link{Line: inlineLine(c, r.lines), Dest: string(c.Destination)})
	case *ast.Image:
		p.Links = append(p.Links, Link{Line: inlineLine(c, r.lines), Dest: string(c.Destination)})
	}
	return true
}

// stray reports a marker that no code block followed.
func (r *reader) stray() {
	if r.pending != nil {
		r.errs = append(r.errs, fmt.Sprintf("%s:%d: doctest marker %q stands before no code block", r.page.Path, r.pending.Line, r.pending.Kind))
		r.pending = nil
	}
}

func isCode(n ast.Node) bool {
	switch n.(type) {
	case *ast.FencedCodeBlock, *ast.CodeBlock:
		return true
	}
	return false
}

// parseMarker reads a doctest comment; ok is false for any other HTML.
func parseMarker(n *ast.HTMLBlock, src []byte, lines lineIndex) (Marker, bool, error) {
	var all []string
	for i := 0; i < n.Lines().Len(); i++ {
		seg := n.Lines().At(i)
		all = append(all, strings.TrimRight(string(seg.Value(src)), "\n"))
	}
	if n.HasClosure() {
		all = append(all, strings.TrimRight(string(n.ClosureLine.Value(src)), "\n"))
	}
	if len(all) == 0 || !strings.HasPrefix(strings.TrimSpace(all[0]), markerPrefix) {
		return Marker{}, false, nil
	}
	m := Marker{Line: lines.line(n.Lines().At(0).Start)}
	first := strings.TrimPrefix(strings.TrimSpace(all[0]), markerPrefix)
	closed := strings.HasSuffix(first, "-->")
	first = strings.TrimSpace(strings.TrimSuffix(first, "-->"))
	first, ok := strings.CutPrefix(first, ":")
	words := strings.Fields(first)
	if !ok || len(words) == 0 {
		return m, false, fmt.Errorf("%d: a doctest marker reads <!-- doctest: run|skip|file|check ... -->", m.Line)
	}
	m.Kind, m.Args = words[0], words[1:]
	for _, l := range all[1:] {
		if closed {
			break
		}
		if t := strings.TrimSpace(l); t == "-->" || strings.HasSuffix(t, "-->") {
			if body := strings.TrimSpace(strings.TrimSuffix(t, "-->")); body != "" {
				m.Body = append(m.Body, body)
			}
			break
		}
		m.Body = append(m.Body, strings.TrimSpace(l))
	}
	switch {
	case m.Kind == "skip" && len(m.Args) == 0:
		return m, true, fmt.Errorf("%d: doctest skip needs a reason: <!-- doctest: skip needs a cluster -->", m.Line)
	case m.Kind == "file" && len(m.Args) != 1:
		return m, true, fmt.Errorf("%d: doctest file needs one file name: <!-- doctest: file bad.yml -->", m.Line)
	case m.Kind == "check" && len(m.Body) == 0:
		return m, true, fmt.Errorf("%d: doctest check has no lines to run", m.Line)
	case m.Kind != "run" && m.Kind != "skip" && m.Kind != "file" && m.Kind != "check":
		return m, true, fmt.Errorf("%d: doctest %q is none of run, skip, file, check", m.Line, m.Kind)
	}
	return m, true, nil
}

func codeBlock(n ast.Node, src []byte, lines lineIndex) Block {
	var b Block
	if f, ok := n.(*ast.FencedCodeBlock); ok {
		b.Lang = string(f.Language(src))
	}
	var buf bytes.Buffer
	segs := n.Lines()
	for i := 0; i < segs.Len(); i++ {
		seg := segs.At(i)
		if i == 0 {
			b.Line = lines.line(seg.Start)
		}
		buf.WriteString(strings.Repeat(" ", seg.Padding))
		buf.Write(seg.Value(src))
	}
	b.Text = buf.String()
	return b
}

// inlineText is a heading's text as GitHub slugs it: the text of its
// children, code spans and emphasis included, without markup.
func inlineText(n ast.Node, src []byte) string {
	var sb strings.Builder
	var walk func(n ast.Node)
	walk = func(n ast.Node) {
		for c := n.FirstChild(); c != nil; c = c.NextSibling() {
			switch c := c.(type) {
			case *ast.Text:
				sb.Write(c.Value(src))
			case *ast.String:
				sb.Write(c.Value)
			default:
				walk(c)
			}
		}
	}
	walk(n)
	return sb.String()
}

// inlineLine is the line of a link: that of its first text.
func inlineLine(n ast.Node, lines lineIndex) int {
	for c := n.FirstChild(); c != nil; c = c.FirstChild() {
		if t, ok := c.(*ast.Text); ok {
			return lines.line(t.Segment.Start)
		}
	}
	for p := n.Parent(); p != nil; p = p.Parent() {
		if p.Type() == ast.TypeBlock && p.Lines().Len() > 0 {
			return lines.line(p.Lines().At(0).Start)
		}
	}
	return 0
}

// Slug is the anchor GitHub gives a heading: lower case, letters, digits,
// '-' and '_' kept, spaces made '-', everything else dropped.
func Slug(heading string) string {
	var sb strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(heading)) {
		switch {
		case unicode.IsLetter(r), unicode.IsDigit(r), r == '-', r == '_':
			sb.WriteRune(r)
		case r == ' ':
			sb.WriteByte('-')
		}
	}
	return sb.String()
}

// lineIndex maps byte offsets to line numbers.
type lineIndex []int

func newLineIndex(src []byte) lineIndex {
	idx := lineIndex{0}
	for i, c := range src {
		if c == '\n' {
			idx = append(idx, i+1)
		}
	}
	return idx
}

func (idx lineIndex) line(off int) int {
	lo, hi := 0, len(idx)
	for lo+1 < hi {
		mid := (lo + hi) / 2
		if idx[mid] <= off {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo + 1
}
