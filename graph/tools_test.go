package graph_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/porch-pipelines/porch/compiler"
	"github.com/porch-pipelines/porch/compiler/plan"
	"github.com/porch-pipelines/porch/graph"
)

// samplesCatalog is what samples/datastores registers (its data.yml).
var samplesCatalog = &plan.Catalog{Data: []plan.Asset{
	{Name: "words", Version: "1", Type: "uri_folder", Path: "/samples/datastores/words"},
}}

// chromium is the browser Mermaid's CLI renders with.
const chromium = "/usr/bin/chromium"

// renderable are the graphs of every sample and, with examples, of every
// Azure ML example that compiles, named by file, each with a run's
// statuses too (every status in turn), so the status classes are checked
// as well.
func renderable(t *testing.T, examples bool) (names []string, graphs []graph.Graph, statuses []map[string]graph.Status) {
	files, err := filepath.Glob(filepath.Join("..", "samples", "*", "*.yml"))
	require.NoError(t, err)
	var samples []string
	for _, f := range files {
		if b := filepath.Base(f); b == "pipeline.yml" || b == "sweep.yml" {
			samples = append(samples, f)
		}
	}
	require.GreaterOrEqual(t, len(samples), 9, "samples/*/pipeline.yml")
	for _, f := range samples {
		names, graphs = append(names, f), append(graphs, graph.Of(compile(t, f).Pipeline))
	}
	if examples {
		names, graphs = compiledExamples(names, graphs)
	}
	for i, g := range graphs {
		st := map[string]graph.Status{}
		k := i
		g.Walk(func(n graph.Node) {
			st[n.Path] = graph.Statuses[k%len(graph.Statuses)]
			k++
		})
		statuses = append(statuses, st)
	}
	return names, graphs, statuses
}

// compiledExamples adds the graphs of the Azure ML examples that compile.
func compiledExamples(names []string, graphs []graph.Graph) ([]string, []graph.Graph) {
	dir := filepath.Join("..", "..", "shared", "azureml-examples", "cli", "jobs")
	_ = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".yml") {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil || !bytes.Contains(data, []byte("type: pipeline")) {
			return nil
		}
		if p, diags := compiler.Compile(path, compiler.Options{}); !diags.HasErrors() {
			names, graphs = append(names, path), append(graphs, graph.Of(p.Pipeline))
		}
		return nil
	})
	return names, graphs
}

// TestMermaidRendersWithMermaidCLI renders `porch compile -o mermaid` of
// every sample, plain and with statuses, with Mermaid's own CLI: it fails
// on any syntax error. (A browser renders each diagram: the Azure ML
// examples would take minutes.)
func TestMermaidRendersWithMermaidCLI(t *testing.T) {
	mmdc, err := exec.LookPath("mmdc")
	if err != nil {
		t.Skip("mmdc (npm install -g @mermaid-js/mermaid-cli, with PUPPETEER_SKIP_DOWNLOAD=1) is not on PATH: Mermaid output not rendered")
	}
	if _, err := os.Stat(chromium); err != nil {
		t.Skip("no " + chromium + " for mmdc to render with")
	}
	names, graphs, statuses := renderable(t, false)
	dir := t.TempDir()
	var md strings.Builder
	for i, g := range graphs {
		fmt.Fprintf(&md, "%s\n\n```mermaid\n%s```\n\n```mermaid\n%s```\n\n", names[i], graph.Mermaid(g, nil), graph.Mermaid(g, statuses[i]))
	}
	conf, err := json.Marshal(map[string]any{"executablePath": chromium,
		"args": []string{"--no-sandbox", "--disable-gpu", "--disable-background-networking"}})
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "puppeteer.json"), conf, 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "in.md"), []byte(md.String()), 0o644))
	cmd := exec.Command(mmdc, "-p", "puppeteer.json", "-i", "in.md", "-o", "out.md")
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "mmdc:\n%s", out)
	for i, g := range graphs {
		for j := range 2 {
			svg, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("out-%d.svg", 2*i+j+1)))
			require.NoError(t, err, names[i])
			assert.Contains(t, string(svg), ">"+g.Nodes[len(g.Nodes)-1].Name+"<", "%s: the SVG names its last step", names[i])
			if j == 1 {
				// Mermaid writes each status class as a rule of its own.
				leaf := g.Nodes[len(g.Nodes)-1].Path
				assert.Contains(t, string(svg), "#my-svg ."+string(statuses[i][leaf])+" span{", names[i])
			}
		}
	}
	t.Logf("mmdc rendered %d diagrams of %d pipelines", 2*len(graphs), len(graphs))
}

// TestDOTRendersWithGraphviz renders `porch compile -o dot` of every sample
// (and every Azure ML example that compiles), plain and with statuses, with
// Graphviz's dot: it fails on any syntax error, and warns of edges it
// cannot clip at a nested pipeline's border.
func TestDOTRendersWithGraphviz(t *testing.T) {
	dot, err := exec.LookPath("dot")
	if err != nil {
		t.Skip("Graphviz's dot is not on PATH (apt-get install graphviz): DOT output not rendered")
	}
	names, graphs, statuses := renderable(t, true)
	for i, g := range graphs {
		for _, st := range []map[string]graph.Status{nil, statuses[i]} {
			cmd := exec.Command(dot, "-Tsvg")
			cmd.Stdin = strings.NewReader(graph.DOT(filepath.Base(filepath.Dir(names[i])), g, st))
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			svg, err := cmd.Output()
			require.NoError(t, err, "%s: %s", names[i], stderr.String())
			assert.Empty(t, stderr.String(), names[i])
			assert.Contains(t, string(svg), ">"+g.Nodes[len(g.Nodes)-1].Name+"</text>", names[i])
		}
	}
	t.Logf("dot rendered %d pipelines", len(graphs))
}
