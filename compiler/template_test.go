package compiler

import (
	"context"

	"github.com/stretchr/testify/assert"

	"github.com/porch-pipelines/porch/compiler/plan"

	"strings"
	"testing"
	"time"
)

// commandRefsYAML is a pipeline whose one step's command, on one line,
// holds n references.
func commandRefsYAML(n int) []byte {
	var b strings.Builder
	b.WriteString("type: pipeline\njobs:\n  s:\n    command: echo")
	for range n {
		b.WriteString(" ${{inputs.x}}")
	}
	b.WriteString("\n    inputs:\n      x: 1\n")
	return []byte(b.String())
}

// openSearchRefsYAML is a sweep job whose command holds n unclosed
// {search_space.x and one closed one at the end.
func openSearchRefsYAML(n int) []byte {
	var b strings.Builder
	b.WriteString("type: sweep\ntrial:\n  command: echo")
	for range n {
		b.WriteString(" {search_space.x")
	}
	b.WriteString(" {search_space.x}\nsearch_space:\n  x: {type: choice, values: [1]}\n" +
		"objective: {primary_metric: m, goal: minimize}\n")
	return []byte(b.String())
}

// BenchmarkCommandReferences compiles a command of 20,000 references and
// one of 200,000 in the same run, and reports the time per reference of
// each and their ratio: about 1 when parsing is linear in the command's
// length, about 10 when it is quadratic. Only the ratio is compared, so
// the machine's speed does not matter; the bound is loose because other
// work on the machine skews single runs.
func BenchmarkCommandReferences(b *testing.B) {
	b.Run("inputs", func(b *testing.B) { benchLinear(b, commandRefsYAML) })
	b.Run("open-search-space", func(b *testing.B) { benchLinear(b, openSearchRefsYAML) })
}

func benchLinear(b *testing.B, file func(n int) []byte) {
	const small, large = 20_000, 200_000
	read := memFS(map[string][]byte{"small.yml": file(small), "large.yml": file(large)})
	compile := func(name string) time.Duration {
		start := time.Now()
		if _, diags := Compile(name, Options{ReadFile: read}); diags.HasErrors() {
			b.Fatal(diags.Error())
		}
		return time.Since(start)
	}
	var tSmall, tLarge time.Duration
	for b.Loop() {
		tSmall += compile("small.yml")
		tLarge += compile("large.yml")
	}
	perSmall := float64(tSmall.Nanoseconds()) / float64(b.N*small)
	perLarge := float64(tLarge.Nanoseconds()) / float64(b.N*large)
	ratio := perLarge / perSmall
	b.ReportMetric(perSmall, "ns/ref@20k")
	b.ReportMetric(perLarge, "ns/ref@200k")
	b.ReportMetric(ratio, "ratio")
	if ratio > 4 {
		b.Errorf("a reference costs %.1f times more in a command of %d references than in one of %d: parsing is not linear",
			ratio, large, small)
	}
}

// TestLegacySearchRefs pins what the older {search_space.x} form is: a
// name between the prefix and the first "}", spaces around it allowed, and
// anything else text.
func TestLegacySearchRefs(t *testing.T) {
	for src, want := range map[string]string{
		"a {search_space.x} b":                     "x",
		"{search_space. x }":                       "x",
		"{search_space.x y}":                       "",
		"{search_space.}":                          "",
		"{search_space.x":                          "",
		"{search_space.x.y}":                       "",
		"{search_space.$x}":                        "",
		"{search_space.x {search_space.y}":         "y",
		"{search_space.{search_space.x}}":          "x",
		"{search_space.x}{search_space.y}":         "x y",
		"{search_space.x ${{search_space.y}} z }":  "y",
		"$[[--a {search_space.x}]] {search_space.": "x",
	} {
		p := newParser(context.Background(), nil, DefaultLimits)
		p.sweepRefs = true
		s := &scalarAST{Value: src, Pos: plan.Pos{File: "f.yml", Line: 1, Col: 5}, Inline: true}
		p.parseTemplate(s)
		var names []string
		for _, r := range p.searchRefs {
			names = append(names, r.Name)
		}
		assert.Equal(t, want, strings.Join(names, " "), src)
		assert.False(t, p.list.HasErrors(), "%q: %s", src, p.list.Error())
	}
}
