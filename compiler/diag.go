package compiler

import (
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	"github.com/porch-pipelines/porch/compiler/plan"
)

// Severity says whether a diagnostic stops compilation.
type Severity int

// Severities.
const (
	// Error stops compilation: no plan is produced.
	Error Severity = iota
	// Warning is reported but does not stop compilation.
	Warning
)

// String returns "error" or "warning".
func (s Severity) String() string {
	if s == Warning {
		return "warning"
	}
	return "error"
}

// Diagnostic is one problem found in a pipeline file, tied to a position.
type Diagnostic struct {
	Pos      plan.Pos
	Severity Severity
	// Summary says what is wrong, in lower case without a final period.
	Summary string
	// Detail says what to do about it; it may be empty.
	Detail string
}

// Diagnostics is a list of problems, sorted by position once a phase ends.
type Diagnostics []Diagnostic

// HasErrors reports whether any diagnostic is an error.
func (d Diagnostics) HasErrors() bool {
	for _, x := range d {
		if x.Severity == Error {
			return true
		}
	}
	return false
}

// Error returns every diagnostic formatted as Format writes them.
func (d Diagnostics) Error() string {
	var b strings.Builder
	d.Format(&b)
	return strings.TrimRight(b.String(), "\n")
}

// Format writes each diagnostic as "file:line:col: error: summary" followed
// by its detail on a tab-indented line. The column is dropped when unknown,
// the line too; warnings say "warning:".
func (d Diagnostics) Format(w io.Writer) {
	for _, x := range d {
		fmt.Fprintf(w, "%s: %s: %s\n", formatPos(x.Pos), x.Severity, x.Summary)
		if x.Detail != "" {
			fmt.Fprintf(w, "\t%s\n", strings.ReplaceAll(x.Detail, "\n", "\n\t"))
		}
	}
}

func formatPos(p plan.Pos) string {
	s := p.File
	if s == "" {
		s = "<input>"
	}
	if p.Line > 0 {
		s += ":" + strconv.Itoa(p.Line)
		if p.Col > 0 {
			s += ":" + strconv.Itoa(p.Col)
		}
	}
	return s
}

// sortDiagnostics orders diagnostics by file, line and column, keeping the
// order in which they were found for equal positions.
func sortDiagnostics(d Diagnostics) {
	sort.SliceStable(d, func(i, j int) bool {
		a, b := d[i].Pos, d[j].Pos
		if a.File != b.File {
			return a.File < b.File
		}
		if a.Line != b.Line {
			return a.Line < b.Line
		}
		return a.Col < b.Col
	})
}

// dedupe drops diagnostics identical to an earlier one, which happens when
// one component file is reached through several steps.
func dedupe(d Diagnostics) Diagnostics {
	seen := make(map[Diagnostic]bool, len(d))
	out := d[:0]
	for _, x := range d {
		if !seen[x] {
			seen[x] = true
			out = append(out, x)
		}
	}
	return out
}

// diags collects the diagnostics of one phase.
type diags struct {
	list Diagnostics
}

func (c *diags) errorf(pos plan.Pos, detail, format string, args ...any) {
	c.list = append(c.list, Diagnostic{Pos: pos, Severity: Error, Summary: fmt.Sprintf(format, args...), Detail: detail})
}

func (c *diags) warnf(pos plan.Pos, detail, format string, args ...any) {
	c.list = append(c.list, Diagnostic{Pos: pos, Severity: Warning, Summary: fmt.Sprintf(format, args...), Detail: detail})
}

// suggest returns a did-you-mean sentence naming the candidate closest to
// name, or "" when none is close.
func suggest(name string, candidates []string) string {
	best, bestDist := "", -1
	for _, c := range candidates {
		d := levenshtein(strings.ToLower(name), strings.ToLower(c))
		if d <= maxDistance(name) && (bestDist < 0 || d < bestDist) {
			best, bestDist = c, d
		}
	}
	if best == "" {
		return ""
	}
	return fmt.Sprintf("did you mean %q?", best)
}

// withHint joins a detail sentence and a did-you-mean hint.
func withHint(detail, hint string) string {
	switch {
	case hint == "":
		return detail
	case detail == "":
		return hint
	}
	return hint + " " + detail
}

func maxDistance(name string) int {
	n := len(name) / 3
	if n < 1 {
		return 1
	}
	if n > 4 {
		return 4
	}
	return n
}

// levenshtein is the edit distance between a and b.
func levenshtein(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}

// names lists the keys of m in sorted order, for suggestions.
func names[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
