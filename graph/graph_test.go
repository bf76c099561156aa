package graph_test

import (
	"flag"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/porch-pipelines/porch/compiler"
	"github.com/porch-pipelines/porch/compiler/plan"
	"github.com/porch-pipelines/porch/graph"
	"github.com/porch-pipelines/porch/internal/golden"
)

var update = flag.Bool("update", false, "rewrite the golden files")

func compile(t *testing.T, file string) *plan.Plan {
	t.Helper()
	p, diags := compiler.Compile(file, compiler.Options{Catalog: samplesCatalog})
	require.False(t, diags.HasErrors(), "%s:\n%s", file, diags.Error())
	return p
}

// TestOfNestedPipelines checks the graph of samples/nested: each nested
// pipeline is a node holding its own steps, and edges join sibling steps
// with the output and input they carry.
func TestOfNestedPipelines(t *testing.T) {
	g := graph.Of(compile(t, filepath.Join("..", "samples", "nested", "pipeline.yml")).Pipeline)

	var paths []string
	g.Walk(func(n graph.Node) { paths = append(paths, n.Path) })
	assert.Equal(t, []string{"english", "english/split", "english/count", "french", "french/split", "french/count", "compare"}, paths)
	assert.Equal(t, 7, g.Len())

	english := g.Nodes[0]
	assert.Equal(t, plan.StepPipeline, english.Type)
	require.NotNil(t, english.Pipeline)
	assert.Equal(t, []graph.Edge{{From: "english/split", Output: "words", To: "english/count", Input: "words"}}, english.Pipeline.Edges)
	assert.Equal(t, []graph.Edge{
		{From: "english", Output: "stats", To: "compare", Input: "english"},
		{From: "french", Output: "stats", To: "compare", Input: "french"},
	}, g.Edges)
	assert.Equal(t, "stats → english", g.Edges[0].Label())
	assert.Equal(t, "words", english.Pipeline.Edges[0].Label())

	compare := g.Nodes[2]
	assert.Equal(t, "porch", compare.Queue)
	assert.Contains(t, compare.Command, "tee ${{outputs.comparison}}/comparison.txt")
	assert.Equal(t, []graph.Port{
		{Name: "english", Type: "uri_folder", Kind: plan.ValueStepOutput, From: "english.stats"},
		{Name: "french", Type: "uri_folder", Kind: plan.ValueStepOutput, From: "french.stats"},
	}, compare.Inputs)
	sentence := english.Inputs[0]
	assert.Equal(t, graph.Port{Name: "sentence", Type: "string", Kind: plan.ValueLiteral, Value: "the quick brown fox jumps over the lazy dog"}, sentence)
	assert.Equal(t, "parent.inputs.sentence", english.Pipeline.Nodes[0].Inputs[0].From)
}

// TestSweepNode checks that a sweep step says what its trials are compared on.
func TestSweepNode(t *testing.T) {
	g := graph.Of(compile(t, filepath.Join("..", "samples", "sweep", "pipeline.yml")).Pipeline)
	sw := g.Nodes[1]
	require.Equal(t, plan.StepSweep, sw.Type)
	assert.Equal(t, &graph.Sweep{Metric: "accuracy", Goal: "maximize", MaxTrials: 8}, sw.Sweep)
	assert.Equal(t, "porch-compute-cpu-cluster", sw.Queue)
}

// TestRender pins the Mermaid and DOT text of samples/nested, plain and
// with a run's statuses.
func TestRender(t *testing.T) {
	g := graph.Of(compile(t, filepath.Join("..", "samples", "nested", "pipeline.yml")).Pipeline)
	statuses := map[string]graph.Status{
		"english": graph.Succeeded, "english/split": graph.Reused, "english/count": graph.Succeeded,
		"french": graph.Failed, "french/split": graph.Succeeded, "french/count": graph.Failed, "compare": graph.Skipped,
	}
	rerun := "go test ./graph -run TestRender -update"
	for name, text := range map[string]string{
		"nested.mmd":     graph.Mermaid(g, nil),
		"nested-run.mmd": graph.Mermaid(g, statuses),
		"nested.dot":     graph.DOT("nested", g, nil),
		"nested-run.dot": graph.DOT("nested", g, statuses),
	} {
		golden.Assert(t, filepath.Join("testdata", name+".yml"), []byte(text), *update, rerun)
	}
}

// TestEscaping checks that names cannot break out of their quotes.
func TestEscaping(t *testing.T) {
	g := graph.Graph{Nodes: []graph.Node{{Path: `a"b`, Name: `a"b<i>#1;`, Type: plan.StepCommand}}}
	assert.Contains(t, graph.Mermaid(g, nil), `n1["a#quot;b#lt;i#gt;#35;1;<br/>command"]`)
	assert.Contains(t, graph.DOT(`x"y`, g, nil), `digraph "x\"y" {`)
	assert.Contains(t, graph.DOT("x", g, nil), `"a\"b" [label="a\"b<i>#1;\ncommand"];`)
}
