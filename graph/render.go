package graph

import (
	"fmt"
	"strings"
)

// caption is a node's text under its name: its type, and its compute
// when it has one.
func caption(n Node) string {
	c := string(n.Type)
	if n.Compute != "" {
		c += " on " + n.Compute
	}
	return c
}

// Mermaid is g as a Mermaid flowchart, left to right: a node per step, a
// subgraph per nested pipeline, edges labelled "output → input". With
// statuses (by step path; nil for a plan), each node is coloured and
// labelled with its status.
func Mermaid(g Graph, statuses map[string]Status) string {
	var b strings.Builder
	b.WriteString("flowchart LR\n")
	ids := map[string]string{}
	g.Walk(func(n Node) { ids[n.Path] = fmt.Sprintf("n%d", len(ids)+1) })
	mermaidNodes(&b, g, ids, statuses, "  ")
	var edges func(Graph)
	edges = func(g Graph) {
		for _, e := range g.Edges {
			fmt.Fprintf(&b, "  %s -->|\"%s\"| %s\n", ids[e.From], mermaidText(e.Label()), ids[e.To])
		}
		for _, n := range g.Nodes {
			if n.Pipeline != nil {
				edges(*n.Pipeline)
			}
		}
	}
	edges(g)
	if len(statuses) == 0 {
		return b.String()
	}
	byStatus := map[Status][]string{}
	g.Walk(func(n Node) {
		if st, ok := statuses[n.Path]; ok && n.Pipeline == nil {
			byStatus[st] = append(byStatus[st], ids[n.Path])
		}
	})
	for _, st := range Statuses {
		if len(byStatus[st]) == 0 {
			continue
		}
		c := Palette[st]
		dash := ""
		if st == Skipped {
			dash = ",stroke-dasharray:4 3"
		}
		fmt.Fprintf(&b, "  classDef %s fill:%s,stroke:%s,color:#111827%s\n", st, c.Fill, c.Stroke, dash)
		fmt.Fprintf(&b, "  class %s %s\n", strings.Join(byStatus[st], ","), st)
	}
	return b.String()
}

func mermaidNodes(b *strings.Builder, g Graph, ids map[string]string, statuses map[string]Status, indent string) {
	for _, n := range g.Nodes {
		label := mermaidText(n.Name) + "<br/>" + mermaidText(caption(n))
		if st, ok := statuses[n.Path]; ok {
			label += "<br/>" + mermaidText(st.Label())
		}
		if n.Pipeline == nil {
			fmt.Fprintf(b, "%s%s[\"%s\"]\n", indent, ids[n.Path], label)
			continue
		}
		fmt.Fprintf(b, "%ssubgraph %s [\"%s\"]\n%s  direction LR\n", indent, ids[n.Path], label, indent)
		mermaidNodes(b, *n.Pipeline, ids, statuses, indent+"  ")
		fmt.Fprintf(b, "%send\n", indent)
	}
}

// mermaidText escapes text for a quoted Mermaid label, with its entity
// codes: quotes, markup and # (which starts an entity code) are written as
// codes.
func mermaidText(s string) string {
	r := strings.NewReplacer("#", "#35;", `"`, "#quot;", "<", "#lt;", ">", "#gt;", "&", "#amp;", "\n", " ")
	return r.Replace(s)
}

// DOT is g as a Graphviz digraph named name, left to right: a node per
// step, a cluster per nested pipeline (edges into and out of it end at
// its border), edges labelled "output → input". With statuses (by step
// path; nil for a plan), each node is coloured and labelled with its
// status.
func DOT(name string, g Graph, statuses map[string]Status) string {
	var b strings.Builder
	fmt.Fprintf(&b, "digraph %s {\n", dotID(name))
	b.WriteString("  rankdir=LR;\n  compound=true;\n")
	b.WriteString("  node [shape=box, style=\"rounded,filled\", fillcolor=\"#ffffff\", color=\"#6b7280\", fontname=\"Helvetica\", fontsize=11];\n")
	b.WriteString("  edge [fontname=\"Helvetica\", fontsize=9, color=\"#6b7280\"];\n")
	dotGraph(&b, g, statuses, "  ")
	b.WriteString("}\n")
	return b.String()
}

func dotGraph(b *strings.Builder, g Graph, statuses map[string]Status, indent string) {
	for _, n := range g.Nodes {
		label := n.Name + "\n" + caption(n)
		st, hasStatus := statuses[n.Path]
		if hasStatus {
			label += "\n" + st.Label()
		}
		if n.Pipeline != nil {
			fmt.Fprintf(b, "%ssubgraph %s {\n%s  label=%s;\n%s  style=\"rounded,dashed\";\n%s  color=\"#6b7280\";\n",
				indent, dotID("cluster_"+n.Path), indent, dotID(label), indent, indent)
			dotGraph(b, *n.Pipeline, statuses, indent+"  ")
			fmt.Fprintf(b, "%s}\n", indent)
			continue
		}
		attrs := "label=" + dotID(label)
		if c, ok := Palette[st]; hasStatus && ok {
			attrs += fmt.Sprintf(", fillcolor=%s, color=%s", dotID(c.Fill), dotID(c.Stroke))
			if st == Skipped {
				attrs += `, style="rounded,filled,dashed"`
			}
		}
		fmt.Fprintf(b, "%s%s [%s];\n", indent, dotID(n.Path), attrs)
	}
	nodes := map[string]Node{}
	for _, n := range g.Nodes {
		nodes[n.Path] = n
	}
	for _, e := range g.Edges {
		attrs := "label=" + dotID(e.Label())
		from, to := nodes[e.From], nodes[e.To]
		if from.Pipeline != nil {
			attrs += ", ltail=" + dotID("cluster_"+from.Path)
		}
		if to.Pipeline != nil {
			attrs += ", lhead=" + dotID("cluster_"+to.Path)
		}
		fmt.Fprintf(b, "%s%s -> %s [%s];\n", indent, dotID(leaf(from, false)), dotID(leaf(to, true)), attrs)
	}
}

// leaf is the step an edge of n is drawn to: n itself, or for a nested
// pipeline a step inside it (its first for an edge in, its last for one
// out), the edge clipped at the pipeline's border.
func leaf(n Node, first bool) string {
	for n.Pipeline != nil && len(n.Pipeline.Nodes) > 0 {
		nodes := n.Pipeline.Nodes
		if first {
			n = nodes[0]
		} else {
			n = nodes[len(nodes)-1]
		}
	}
	return n.Path
}

// dotID quotes s as a DOT string.
func dotID(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(s) + `"`
}
