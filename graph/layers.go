package graph

import (
	"cmp"
	"slices"
)

// Layers places a graph's steps in layers, left to right, as the web page
// draws a large run, where laying it out in the browser takes seconds:
// each step one layer past the furthest step it reads from (a step that
// reads from none sits just before its first reader), each edge that spans
// layers given a slot in every layer it passes, and each layer's order
// chosen to cross few edges (barycentre sweeps, the best order kept). A
// nested pipeline is one node. The page turns layers and slots into
// coordinates with the text widths it measures.
type Layers struct {
	// Layers are the layers left to right, each its slots top to bottom:
	// a step's path, or "" where an edge passes.
	Layers [][]string `json:"layers"`
	// Routes are the graph's edges' routes, in its Edges' order: the slot
	// the edge passes in each layer between its ends, none for an edge
	// between neighbouring layers.
	Routes [][]int `json:"routes"`
	// Crossings is how many edge segments cross in this order.
	Crossings int `json:"crossings"`
}

// sweeps is how many rounds of barycentre sweeps (one down, one up) order
// the layers.
const sweeps = 6

// LayersOf lays g's steps out in layers.
func LayersOf(g Graph) Layers {
	n := len(g.Nodes)
	index := make(map[string]int, n)
	for i, nd := range g.Nodes {
		index[nd.Path] = i
	}
	type link struct{ from, to int }
	links := make([]link, len(g.Edges))
	succ := make([][]int, n)
	indeg := make([]int, n)
	for i, e := range g.Edges {
		f, okf := index[e.From]
		t, okt := index[e.To]
		if !okf || !okt || f == t {
			links[i] = link{-1, -1}
			continue
		}
		links[i] = link{f, t}
		succ[f] = append(succ[f], t)
		indeg[t]++
	}

	// Longest path from the sources, in topological order (Kahn's, ties by
	// plan order). A plan has no cycles; a node on one would stay in
	// layer 0.
	layer := make([]int, n)
	queue := make([]int, 0, n)
	for i := range n {
		if indeg[i] == 0 {
			queue = append(queue, i)
		}
	}
	for k := 0; k < len(queue); k++ {
		v := queue[k]
		for _, w := range succ[v] {
			layer[w] = max(layer[w], layer[v]+1)
			if indeg[w]--; indeg[w] == 0 {
				queue = append(queue, w)
			}
		}
	}
	hasPred := make([]bool, n)
	for _, l := range links {
		if l.from >= 0 {
			hasPred[l.to] = true
		}
	}
	for v := range n {
		if hasPred[v] || len(succ[v]) == 0 {
			continue
		}
		first := layer[succ[v][0]]
		for _, w := range succ[v] {
			first = min(first, layer[w])
		}
		layer[v] = first - 1
	}

	// Slots: the steps, then a slot per layer an edge passes. up and down
	// are each slot's neighbours in the layers before and after it.
	depth := 0
	for _, l := range layer {
		depth = max(depth, l+1)
	}
	slotLayer := slices.Clone(layer)
	up := make([][]int, n)
	down := make([][]int, n)
	connect := func(a, b int) {
		down[a] = append(down[a], b)
		up[b] = append(up[b], a)
	}
	passes := make([][]int, len(links))
	for i, l := range links {
		if l.from < 0 {
			continue
		}
		prev := l.from
		for k := layer[l.from] + 1; k < layer[l.to]; k++ {
			s := len(slotLayer)
			slotLayer = append(slotLayer, k)
			up, down = append(up, nil), append(down, nil)
			connect(prev, s)
			passes[i] = append(passes[i], s)
			prev = s
		}
		connect(prev, l.to)
	}
	order := make([][]int, depth)
	for s, k := range slotLayer {
		order[k] = append(order[k], s)
	}
	pos := make([]int, len(slotLayer))
	place := func(k int) {
		for i, s := range order[k] {
			pos[s] = i
		}
	}
	for k := range order {
		place(k)
	}

	// Barycentre sweeps: each slot moves to the mean position of its
	// neighbours in the layer just ordered; one without stays where it is.
	best := crossings(order, down, pos)
	bestOrder := cloneOrder(order)
	key := make([]float64, len(slotLayer))
	sortLayer := func(k int, nb [][]int) {
		for _, s := range order[k] {
			key[s] = float64(pos[s])
			if len(nb[s]) > 0 {
				sum := 0
				for _, t := range nb[s] {
					sum += pos[t]
				}
				key[s] = float64(sum) / float64(len(nb[s]))
			}
		}
		slices.SortStableFunc(order[k], func(a, b int) int { return cmp.Compare(key[a], key[b]) })
		place(k)
	}
	for range sweeps {
		if best == 0 {
			break
		}
		for k := 1; k < depth; k++ {
			sortLayer(k, up)
		}
		for k := depth - 2; k >= 0; k-- {
			sortLayer(k, down)
		}
		if c := crossings(order, down, pos); c < best {
			best, bestOrder = c, cloneOrder(order)
		}
	}

	out := Layers{Layers: make([][]string, depth), Routes: make([][]int, len(links)), Crossings: best}
	for k, slots := range bestOrder {
		out.Layers[k] = make([]string, len(slots))
		for i, s := range slots {
			pos[s] = i
			if s < n {
				out.Layers[k][i] = g.Nodes[s].Path
			}
		}
	}
	for i, ss := range passes {
		for _, s := range ss {
			out.Routes[i] = append(out.Routes[i], pos[s])
		}
	}
	return out
}

func cloneOrder(order [][]int) [][]int {
	c := make([][]int, len(order))
	for k, o := range order {
		c[k] = slices.Clone(o)
	}
	return c
}

// crossings counts the pairs of edge segments that cross between
// neighbouring layers: the inversions of the segments' lower ends once
// sorted by their upper ends (merge sort).
func crossings(order [][]int, down [][]int, pos []int) int {
	total := 0
	var ends, buf []int
	type seg struct{ a, b int }
	var segs []seg
	for k := 0; k+1 < len(order); k++ {
		segs = segs[:0]
		for _, s := range order[k] {
			for _, t := range down[s] {
				segs = append(segs, seg{pos[s], pos[t]})
			}
		}
		slices.SortFunc(segs, func(x, y seg) int {
			return cmp.Or(cmp.Compare(x.a, y.a), cmp.Compare(x.b, y.b))
		})
		ends = ends[:0]
		for _, sg := range segs {
			ends = append(ends, sg.b)
		}
		buf = slices.Grow(buf[:0], len(ends))[:len(ends)]
		total += inversions(ends, buf)
	}
	return total
}

// inversions sorts a and returns how many pairs were out of order.
func inversions(a, buf []int) int {
	if len(a) < 2 {
		return 0
	}
	m := len(a) / 2
	c := inversions(a[:m], buf[:m]) + inversions(a[m:], buf[m:])
	i, j, k := 0, m, 0
	for i < m && j < len(a) {
		if a[j] < a[i] {
			c += m - i
			buf[k] = a[j]
			j++
		} else {
			buf[k] = a[i]
			i++
		}
		k++
	}
	k += copy(buf[k:], a[i:m])
	copy(buf[k:], a[j:])
	copy(a, buf[:len(a)])
	return c
}
