package compiler

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/porch-pipelines/porch/compiler/plan"
)

// chainYAML is a pipeline of n steps, each consuming the previous one's output.
func chainYAML(n int) []byte {
	var b bytes.Buffer
	b.WriteString("type: pipeline\ninputs:\n  start: 1\njobs:\n")
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "  s%d:\n    command: echo ${{inputs.x}} > ${{outputs.out}}/f\n    inputs:\n", i)
		if i == 0 {
			b.WriteString("      x: ${{parent.inputs.start}}\n")
		} else {
			fmt.Fprintf(&b, "      x: ${{parent.jobs.s%d.outputs.out}}\n", i-1)
		}
		b.WriteString("    outputs:\n      out:\n")
	}
	return b.Bytes()
}

// memFS serves files from memory through Options.ReadFile.
func memFS(files map[string][]byte) func(string) ([]byte, error) {
	return func(name string) ([]byte, error) {
		if b, ok := files[filepath.ToSlash(filepath.Clean(name))]; ok {
			return b, nil
		}
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
	}
}

func TestCompileChain400(t *testing.T) {
	read := memFS(map[string][]byte{"chain.yml": chainYAML(400)})
	p, diags := Compile("chain.yml", Options{ReadFile: read})
	require.False(t, diags.HasErrors(), diags.Error())
	require.Len(t, p.Pipeline.Steps, 400)
	for i, s := range p.Pipeline.Steps {
		assert.Equal(t, fmt.Sprintf("s%d", i), s.Name)
		if i > 0 {
			assert.Equal(t, []string{fmt.Sprintf("s%d", i-1)}, s.DependsOn)
		}
	}
}

func BenchmarkCompileChain400(b *testing.B) {
	read := memFS(map[string][]byte{"chain.yml": chainYAML(400)})
	b.ReportAllocs()
	for b.Loop() {
		if _, diags := Compile("chain.yml", Options{ReadFile: read}); diags.HasErrors() {
			b.Fatal(diags.Error())
		}
	}
}

// samplesCatalog is what samples/datastores registers (its data.yml): the
// samples compile as on a server where it is registered.
var samplesCatalog = &plan.Catalog{Data: []plan.Asset{
	{Name: "words", Version: "1", Type: "uri_folder", Path: "/samples/datastores/words"},
}}

// TestSamples compiles every pipeline under ../samples, when there is one.
func TestSamples(t *testing.T) {
	dir := filepath.Join("..", "samples")
	if _, err := os.Stat(dir); err != nil {
		t.Skip("no samples folder")
	}
	files := pipelineFiles(t, dir)
	for _, f := range files {
		_, diags := Compile(f, Options{Catalog: samplesCatalog})
		if isPipelineComponent(t, f) && onlyMissingInputs(diags) {
			// A pipeline component whose inputs have no defaults is
			// meant to be used by a pipeline, not run alone.
			continue
		}
		assert.False(t, diags.HasErrors(), "%s:\n%s", f, diags.Error())
	}
	t.Logf("compiled %d sample pipelines", len(files))
}

// TestGarbled feeds truncated and garbled versions of real pipelines to the
// compiler: it must never panic, and every diagnostic must name a file.
func TestGarbled(t *testing.T) {
	seeds := []string{
		filepath.Join("testdata", "TestPlan", "io.yml"),
		filepath.Join("testdata", "TestPlan", "nested.yml"),
		filepath.Join("testdata", "TestPlan", "components", "sub.yml"),
		filepath.Join("testdata", "TestPlan", "batch.yml"),
	}
	for _, seed := range seeds {
		data, err := os.ReadFile(seed)
		require.NoError(t, err)
		for _, variant := range garble(data) {
			checkNoPanic(t, seed, variant)
		}
	}
}

// garble returns truncations, line deletions and byte substitutions of data.
func garble(data []byte) [][]byte {
	var out [][]byte
	for n := 0; n < len(data); n += 7 {
		out = append(out, data[:n])
	}
	lines := strings.Split(string(data), "\n")
	for i := range lines {
		rest := append(append([]string{}, lines[:i]...), lines[i+1:]...)
		out = append(out, []byte(strings.Join(rest, "\n")))
	}
	subs := []string{"{", "}", "[", "\t", ":", "$", "${{", "}}", "$[[", "]]", "-", "&a", "*a", "\x00", "'"}
	for i := 0; i < len(data); i += 5 {
		s := subs[(i/5)%len(subs)]
		v := append(append(append([]byte{}, data[:i]...), s...), data[i+1:]...)
		out = append(out, v)
	}
	return out
}

func checkNoPanic(t *testing.T, seed string, variant []byte) {
	t.Helper()
	dir := filepath.Dir(seed)
	files := map[string][]byte{}
	_ = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if b, err := os.ReadFile(path); err == nil {
				files[filepath.ToSlash(path)] = b
			}
		}
		return nil
	})
	files[filepath.ToSlash(seed)] = variant
	defer func() {
		if r := recover(); r != nil {
			t.Fatalf("panic on a garbled %s: %v\n%s\n--- input ---\n%s", seed, r, debug.Stack(), variant)
		}
	}()
	_, diags := Compile(seed, Options{ReadFile: memFS(files)})
	for _, d := range diags {
		if d.Pos.File == "" {
			t.Fatalf("diagnostic without a file on a garbled %s: %s", seed, d.Summary)
		}
		if strings.HasPrefix(d.Summary, "yaml syntax error") && (d.Pos.Line == 0 || d.Pos.Col == 0) {
			t.Fatalf("syntax error without a line and column on a garbled %s: %s\n--- input ---\n%s", seed, d.Summary, variant)
		}
	}
}

// Bounds every input of FuzzCompile must stay within, as `porch validate`
// must for any file.
const (
	fuzzTimeLimit   = 10 * time.Second
	fuzzMemoryLimit = 1 << 30
)

// FuzzCompile compiles arbitrary bytes as a pipeline with one component
// next to it, and as a component the pipeline may name (itself, or many
// times): it must never panic, must say what failed where (a syntax error
// at a line and column), and must finish
// within fuzzTimeLimit and fuzzMemoryLimit of heap. Seeded with testdata,
// the samples and, when present, ../shared/azureml-examples. `make test`
// runs the seeds and fuzzes briefly; `make fuzz` fuzzes longer.
func FuzzCompile(f *testing.F) {
	for _, seed := range []string{"io.yml", "nested.yml", "batch.yml", "component_root.yml"} {
		data, err := os.ReadFile(filepath.Join("testdata", "TestPlan", seed))
		require.NoError(f, err)
		f.Add(data)
	}
	f.Add(chainYAML(3))
	for _, dir := range []string{filepath.Join("..", "samples"), examplesDir} {
		if _, err := os.Stat(dir); err != nil {
			continue
		}
		for _, file := range pipelineFiles(f, dir) {
			data, err := os.ReadFile(file)
			require.NoError(f, err)
			f.Add(data)
		}
	}
	comp, err := os.ReadFile(filepath.Join("testdata", "TestPlan", "components", "train.yml"))
	require.NoError(f, err)
	f.Fuzz(func(t *testing.T, data []byte) {
		read := memFS(map[string][]byte{"p.yml": data, "components/train.yml": comp, "components/sub.yml": data})
		var before runtime.MemStats
		runtime.ReadMemStats(&before)
		done := make(chan struct{})
		go func() {
			defer close(done)
			p, diags := Compile("p.yml", Options{ReadFile: read})
			if p == nil && !diags.HasErrors() {
				t.Error("no plan and no error")
			}
			for _, d := range diags {
				if d.Pos.File == "" || d.Summary == "" {
					t.Errorf("diagnostic without a file or summary: %+v", d)
				}
				if strings.HasPrefix(d.Summary, "yaml syntax error") && (d.Pos.Line == 0 || d.Pos.Col == 0) {
					t.Errorf("syntax error without a line and column: %+v", d)
				}
			}
		}()
		// Waits for the compile, within the bounds.
		deadline := time.NewTimer(fuzzTimeLimit)
		defer deadline.Stop()
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-deadline.C:
				t.Fatalf("compiling took over %s:\n%.2000s", fuzzTimeLimit, data)
			case <-tick.C:
				var now runtime.MemStats
				runtime.ReadMemStats(&now)
				if now.HeapAlloc > before.HeapAlloc+fuzzMemoryLimit {
					t.Fatalf("compiling took over %d MiB of heap:\n%.2000s", fuzzMemoryLimit>>20, data)
				}
			}
		}
	})
}

func isPipelineComponent(t *testing.T, file string) bool {
	data, err := os.ReadFile(file)
	require.NoError(t, err)
	return bytes.Contains(data, []byte("pipelineComponent"))
}

func onlyMissingInputs(diags Diagnostics) bool {
	for _, d := range diags {
		if d.Severity == Error && !strings.HasPrefix(d.Summary, "required pipeline input") {
			return false
		}
	}
	return true
}

// TestMergeKeys follows YAML merge keys and bounds their expansion.
func TestMergeKeys(t *testing.T) {
	var b strings.Builder
	b.WriteString("base: &m0 {command: echo hi}\n")
	for i := 1; i <= 40; i++ {
		fmt.Fprintf(&b, "m%d: &m%d\n  <<: *m%d\n  x%d: 1\n", i, i, i-1, i)
	}
	b.WriteString("type: pipeline\njobs:\n  hello:\n    <<: *m0\n")
	read := memFS(map[string][]byte{"p.yml": []byte(b.String())})
	p, diags := Compile("p.yml", Options{ReadFile: read})
	require.False(t, diags.HasErrors(), diags.Error())
	assert.Equal(t, "echo hi", p.Pipeline.Steps[0].Command.Template.Source)
}
