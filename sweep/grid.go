package sweep

import (
	"math"
	"sort"

	"github.com/porch-pipelines/porch/compiler/plan"
)

// grid is the grid algorithm: the exact cartesian product of the choices,
// parameters in name order with the first varying slowest, values in their
// written order. A dict value stands for the product of its own entries'
// choices (entries in key order), in place.
type grid struct {
	// options holds, per top-level parameter, every way to set it: one
	// assignment fragment each.
	options [][]Assignment
	total   int
	next    int
}

func newGrid(sp *space, started int) *grid {
	g := &grid{total: 1, next: started}
	for _, p := range sp.params {
		opts := choiceOptions(p)
		g.options = append(g.options, opts)
		g.total = mulCapped(g.total, len(opts))
	}
	return g
}

// choiceOptions enumerates a choice parameter's fragments.
func choiceOptions(p *param) []Assignment {
	var out []Assignment
	for i, c := range p.Choices {
		if p.nested == nil || p.nested[i] == nil {
			out = append(out, Assignment{literalValue(p.Name, c.Literal)})
			continue
		}
		for _, entries := range productOf(p.nested[i]) {
			out = append(out, append(Assignment{dictValue(p.Name, entries)}, entries...))
		}
	}
	return out
}

// productOf enumerates the product of some parameters' fragments, the
// first parameter varying slowest.
func productOf(ps []*param) []Assignment {
	out := []Assignment{nil}
	for _, p := range ps {
		opts := choiceOptions(p)
		next := make([]Assignment, 0, len(out)*len(opts))
		for _, prefix := range out {
			for _, o := range opts {
				next = append(next, append(append(Assignment(nil), prefix...), o...))
			}
		}
		out = next
	}
	return out
}

// mulCapped multiplies sizes, saturating at MaxInt: a grid that large is
// never enumerated to its end anyway.
func mulCapped(a, b int) int {
	if a != 0 && b > math.MaxInt/a {
		return math.MaxInt
	}
	return a * b
}

// GridSize returns how many trials a grid over a valid all-choice search
// space has (MaxInt when that overflows an int), so that a sweep can report
// min(max_total_trials, GridSize) as its planned trial count.
func GridSize(space []plan.Parameter) int {
	return newGrid(newSpace(space, math.E), 0).total
}

// Next implements Sampler: the next n points of the grid, and whether any
// remain after them.
func (g *grid) Next(n int, _ []Observation) ([]Assignment, bool) {
	var out []Assignment
	for ; n > 0 && g.next < g.total; n-- {
		out = append(out, g.at(g.next))
		g.next++
	}
	return out, g.next < g.total
}

// at decodes grid index i in mixed radix, the last parameter fastest.
func (g *grid) at(i int) Assignment {
	var a Assignment
	picks := make([]int, len(g.options))
	for j := len(g.options) - 1; j >= 0; j-- {
		n := len(g.options[j])
		picks[j] = i % n
		i /= n
	}
	for j, k := range picks {
		a = append(a, g.options[j][k]...)
	}
	sort.SliceStable(a, func(i, j int) bool { return a[i].Name < a[j].Name })
	return a
}
