package compiler

import (
	"sort"
	"strings"
)

// orderSteps reports dependency cycles and sorts a pipeline's steps
// topologically, ties broken by declaration order.
func orderSteps(d *diags, pl *pipelineAST) {
	byName := make(map[string]*stepAST, len(pl.Steps))
	for _, s := range pl.Steps {
		byName[s.Name] = s
	}
	if reportCycles(d, pl.Steps, byName) {
		return
	}
	pl.order = topoSort(pl.Steps)
}

// reportCycles finds every cycle with a depth-first search in declaration
// order and reports each once, as producer -> consumer -> ... -> producer.
func reportCycles(d *diags, steps []*stepAST, byName map[string]*stepAST) bool {
	const (
		white = iota
		grey
		black
	)
	color := make(map[string]int, len(steps))
	var stack []*stepAST
	found := false
	var visit func(s *stepAST)
	visit = func(s *stepAST) {
		color[s.Name] = grey
		stack = append(stack, s)
		for _, dep := range s.deps {
			t := byName[dep]
			switch color[dep] {
			case white:
				visit(t)
			case grey:
				found = true
				reportCycle(d, stack, t)
			}
		}
		stack = stack[:len(stack)-1]
		color[s.Name] = black
	}
	for _, s := range steps {
		if color[s.Name] == white {
			visit(s)
		}
	}
	return found
}

// reportCycle reports the cycle that closes at t on the search stack.
func reportCycle(d *diags, stack []*stepAST, t *stepAST) {
	i := len(stack) - 1
	for i > 0 && stack[i] != t {
		i--
	}
	cycle := append([]*stepAST(nil), stack[i:]...)
	// The stack runs consumer to producer; a user reads data flow.
	for l, r := 0, len(cycle)-1; l < r; l, r = l+1, r-1 {
		cycle[l], cycle[r] = cycle[r], cycle[l]
	}
	first := 0
	for j, s := range cycle {
		if s.index < cycle[first].index {
			first = j
		}
	}
	cycle = append(cycle[first:], cycle[:first]...)
	path := make([]string, 0, len(cycle)+1)
	for _, s := range cycle {
		path = append(path, s.Name)
	}
	path = append(path, cycle[0].Name)
	d.errorf(cycle[0].Pos, "break the cycle: a step cannot consume, directly or not, its own outputs",
		"steps form a cycle: %s", strings.Join(path, " -> "))
}

// topoSort is Kahn's algorithm, always taking the earliest-declared ready step.
func topoSort(steps []*stepAST) []*stepAST {
	pending := make(map[string]int, len(steps))
	consumers := make(map[string][]*stepAST, len(steps))
	var ready []*stepAST
	for _, s := range steps {
		pending[s.Name] = len(s.deps)
		for _, dep := range s.deps {
			consumers[dep] = append(consumers[dep], s)
		}
		if len(s.deps) == 0 {
			ready = append(ready, s)
		}
	}
	order := make([]*stepAST, 0, len(steps))
	for len(ready) > 0 {
		s := ready[0]
		ready = ready[1:]
		order = append(order, s)
		for _, c := range consumers[s.Name] {
			pending[c.Name]--
			if pending[c.Name] == 0 {
				i := sort.Search(len(ready), func(i int) bool { return ready[i].index > c.index })
				ready = append(ready, nil)
				copy(ready[i+1:], ready[i:])
				ready[i] = c
			}
		}
	}
	return order
}
