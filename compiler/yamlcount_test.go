package compiler

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"
)

// treeNodes counts the nodes yaml.v3 builds for data, document nodes
// included, aliases as one node each.
func treeNodes(t *testing.T, data []byte) int {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	total := 0
	for {
		var doc yaml.Node
		if err := dec.Decode(&doc); err != nil {
			return total
		}
		var walk func(n *yaml.Node)
		walk = func(n *yaml.Node) {
			total++
			for _, c := range n.Content {
				walk(c)
			}
		}
		walk(&doc)
	}
}

// TestCountNodes checks countNodes against the trees yaml.v3 builds: for
// every YAML file of the samples, the test data and azureml-examples, and
// for hand-written forms, the count is within a factor of two of the
// nodes, which is what MaxYAMLNodes promises.
func TestCountNodes(t *testing.T) {
	forms := map[string]string{
		"flow list":     "x: [0,0,0,0,0,0,0,0,0,0]\n",
		"flow mapping":  "x: {a: 1, b: 2, c: [3, 4]}\n",
		"block list":    "x:\n- 1\n- 2\n- 3\n- 4\n",
		"nested lists":  "- - - - 0\n- - - - 0\n",
		"list of maps":  "- a: 1\n  b: 2\n- a: 3\n  b: 4\n",
		"empty values":  "a:\nb:\nc:\nd: ~\n",
		"quoted":        "a: \"x: [1, 2] # not a comment\"\nb: 'it''s: {}'\nc: \"two\n  lines\"\n",
		"block scalar":  "a: |\n  - not\n  - a: list\nb: >-\n  folded [ text ]\nc: 1\n",
		"comments":      "# a: [1, 2, 3]\na: 1 # b: [4, 5]\n",
		"anchors":       "a: &x [1, 2]\nb: *x\nc: !!str 3\n",
		"documents":     "---\na: 1\n---\nb: [1, 2]\n...\n",
		"complex keys":  "? [a, b]\n: 1\n",
		"plain with ::": "url: http://example.com:80/x\nflow: [http://a, b]\n",
	}
	for name, src := range forms {
		checkCount(t, name, []byte(src))
	}
	var files []string
	for _, dir := range []string{"testdata", filepath.Join("..", "samples"), examplesDir} {
		_ = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() && (strings.HasSuffix(path, ".yml") || strings.HasSuffix(path, ".yaml")) {
				files = append(files, path)
			}
			return nil
		})
	}
	require.NotEmpty(t, files)
	for _, f := range files {
		data, err := os.ReadFile(f)
		require.NoError(t, err)
		checkCount(t, f, data)
	}
}

func checkCount(t *testing.T, name string, data []byte) {
	t.Helper()
	real := treeNodes(t, data)
	if real == 0 {
		return // not YAML yaml.v3 reads: counting is all that matters
	}
	n, at := countNodes(data, 1<<30)
	assert.Equal(t, -1, at)
	assert.True(t, n*2 >= real && n <= 2*real, "%s: counted %d, yaml.v3 builds %d", name, n, real)
}

// denseYAML is a file of about size bytes: one list of zeros, the densest
// YAML there is (two bytes a node).
func denseYAML(size int) []byte {
	var b bytes.Buffer
	b.WriteString("x: [0")
	for b.Len() < size-2 {
		b.WriteString(",0")
	}
	b.WriteString("]\n")
	return b.Bytes()
}

// TestYAMLNodesLimit refuses a dense 10 MiB file, and six dense component
// files together, at the node that passes MaxYAMLNodes, before yaml.v3
// builds them: compiling allocates far less than the gigabyte and more
// its trees would take (1.6 GiB for the one file before the limit).
func TestYAMLNodesLimit(t *testing.T) {
	dense := denseYAML(10 << 20)
	read := memFS(map[string][]byte{"p.yml": dense})
	allocated := allocatedBy(func() {
		diags := refused(t, "p.yml", Options{ReadFile: read}, `p.yml:1:`, `"p.yml" holds more than 1000000 YAML nodes`, "PORCH_MAX_YAML_NODES=N")
		assert.Len(t, diags, 1)
	})
	assert.Less(t, allocated, uint64(256<<20), "compiling a dense 10 MiB file allocated %d MiB", allocated>>20)

	// Six component files of 200,000 nodes each: the fifth is one too many.
	files := map[string][]byte{}
	var p strings.Builder
	p.WriteString("type: pipeline\njobs:\n")
	for i := range 6 {
		name := string(rune('a'+i)) + ".yml"
		files[name] = append([]byte("type: command\ncommand: echo hi\nenvironment: {image: python}\ntags:\n  x: 1\n  long: "), denseYAML(400_000)...)
		p.WriteString("  s" + string(rune('a'+i)) + ":\n    component: " + name + "\n")
	}
	files["p.yml"] = []byte(p.String())
	refused(t, "p.yml", Options{ReadFile: memFS(files)}, `the pipeline's files hold more than 1000000 YAML nodes in all ("e.yml" is one too many)`)

	_, diags := Compile("p.yml", Options{ReadFile: memFS(files), Limits: Limits{MaxYAMLNodes: 2_000_000}})
	assert.NotContains(t, diags.Error(), "YAML nodes", "raised, the limit lets them through")

	// A document, its mapping, a, the list and three numbers: 7 nodes.
	assert.Empty(t, CheckYAMLNodes("f.yml", []byte("a: [1, 2, 3]\n"), Limits{MaxYAMLNodes: 7}))
	assert.Equal(t, `f.yml:1:11: error: "f.yml" holds more than 6 YAML nodes`,
		strings.SplitN(CheckYAMLNodes("f.yml", []byte("a: [1, 2, 3]\n"), Limits{MaxYAMLNodes: 6}).Error(), "\n", 2)[0])
}

// allocatedBy is the heap f allocates, in all: an upper bound on the
// heap it holds at any one time.
func allocatedBy(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// BenchmarkCompileDense10MiB compiles a dense 10 MiB YAML file (five
// million nodes), reporting what it allocates: refused by MaxYAMLNodes
// before yaml.v3 decodes it, it allocates a few megabytes; decoded, it
// would take over a gigabyte and a half.
func BenchmarkCompileDense10MiB(b *testing.B) {
	read := memFS(map[string][]byte{"p.yml": denseYAML(10 << 20)})
	b.ReportAllocs()
	for b.Loop() {
		Compile("p.yml", Options{ReadFile: read})
	}
}
