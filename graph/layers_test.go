package graph_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/porch-pipelines/porch/graph"
)

// dag is a graph of steps named by edges "from>to".
func dag(nodes []string, edges ...string) graph.Graph {
	var g graph.Graph
	for _, n := range nodes {
		g.Nodes = append(g.Nodes, graph.Node{Path: n, Name: n})
	}
	for _, e := range edges {
		var from, to string
		for i := range e {
			if e[i] == '>' {
				from, to = e[:i], e[i+1:]
			}
		}
		g.Edges = append(g.Edges, graph.Edge{From: from, Output: "out", To: to, Input: "in"})
	}
	return g
}

// TestLayersOf checks the layers of small graphs: a step one layer past
// what it reads, a source just before its reader, a slot for an edge that
// spans layers, and an order without crossings where one exists.
func TestLayersOf(t *testing.T) {
	l := graph.LayersOf(dag([]string{"a", "b", "c"}, "a>b", "b>c", "a>c"))
	assert.Len(t, l.Layers, 3)
	assert.ElementsMatch(t, []string{"b", ""}, l.Layers[1])
	assert.Equal(t, [][]string{{"a"}, {"c"}}, [][]string{l.Layers[0], l.Layers[2]})
	require.Len(t, l.Routes, 3)
	assert.Nil(t, l.Routes[0])
	assert.Nil(t, l.Routes[1])
	require.Len(t, l.Routes[2], 1, "a>c passes layer 1")
	assert.Equal(t, "", l.Layers[1][l.Routes[2][0]])
	assert.Zero(t, l.Crossings)

	// x reads nothing and feeds c only: it sits in c's layer before.
	l = graph.LayersOf(dag([]string{"a", "b", "c", "x"}, "a>b", "b>c", "x>c"))
	assert.Equal(t, 3, len(l.Layers))
	assert.ElementsMatch(t, []string{"b", "x"}, l.Layers[1])
	for _, r := range l.Routes {
		assert.Nil(t, r)
	}

	// In plan order b1 and b2 cross: b1 reads a2, b2 reads a1.
	l = graph.LayersOf(dag([]string{"a1", "a2", "b1", "b2", "c1", "c2"}, "a2>b1", "a1>b2", "b1>c1", "b2>c2", "a1>c2"))
	assert.Zero(t, l.Crossings, "%v", l.Layers)

	// K(2,2) twice over cannot be drawn without a crossing.
	l = graph.LayersOf(dag([]string{"a", "b", "c", "d"}, "a>c", "a>d", "b>c", "b>d"))
	assert.Equal(t, 1, l.Crossings)
}

// large is the browser test's 500-step run's shape: a first step, then
// chains of ten steps after it.
func large(n int) graph.Graph {
	var nodes, edges []string
	for i := range n {
		nodes = append(nodes, fmt.Sprint("c", i))
		if i == 0 {
			continue
		}
		prev := i - 1
		if (i-1)%10 == 0 {
			prev = 0
		}
		edges = append(edges, fmt.Sprintf("c%d>c%d", prev, i))
	}
	return dag(nodes, edges...)
}

// TestLayersOfLarge checks the 500-step run: eleven layers, its chains
// side by side without a crossing.
func TestLayersOfLarge(t *testing.T) {
	l := graph.LayersOf(large(500))
	require.Len(t, l.Layers, 11)
	assert.Equal(t, []string{"c0"}, l.Layers[0])
	for _, slots := range l.Layers[1:10] {
		assert.Len(t, slots, 50)
	}
	assert.Len(t, l.Layers[10], 49, "c10 to c490")
	assert.Zero(t, l.Crossings)
}

// TestLayersOfSamples checks every sample's and Azure ML example's
// graph, nested pipelines' too: each step in one slot, each edge going
// right with a slot in every layer it passes.
func TestLayersOfSamples(t *testing.T) {
	names, graphs, _ := renderable(t, true)
	for i, g := range graphs {
		check := func(g graph.Graph) {
			l := graph.LayersOf(g)
			at := map[string][2]int{}
			for k, slots := range l.Layers {
				for j, p := range slots {
					if p == "" {
						continue
					}
					_, dup := at[p]
					assert.False(t, dup, "%s: %s twice", names[i], p)
					at[p] = [2]int{k, j}
				}
			}
			assert.Len(t, at, len(g.Nodes), names[i])
			require.Len(t, l.Routes, len(g.Edges), names[i])
			for j, e := range g.Edges {
				from, to := at[e.From], at[e.To]
				assert.Less(t, from[0], to[0], "%s: %s goes right", names[i], e.From+">"+e.To)
				require.Len(t, l.Routes[j], to[0]-from[0]-1, "%s: %s has a slot in each layer it passes", names[i], e.From+">"+e.To)
				for k, s := range l.Routes[j] {
					assert.Equal(t, "", l.Layers[from[0]+1+k][s], names[i])
				}
			}
		}
		check(g)
		g.Walk(func(n graph.Node) {
			if n.Pipeline != nil {
				check(*n.Pipeline)
			}
		})
	}
}

// BenchmarkLayersOf lays out the browser test's 500-step run.
func BenchmarkLayersOf(b *testing.B) {
	g := large(500)
	for b.Loop() {
		graph.LayersOf(g)
	}
}
