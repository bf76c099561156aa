package compiler

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// refused compiles path and checks that it fails with one error holding
// every one of want, and no plan.
func refused(t *testing.T, path string, opts Options, want ...string) Diagnostics {
	t.Helper()
	p, diags := Compile(path, opts)
	require.True(t, diags.HasErrors(), "compiled without errors: %s", diags.Error())
	assert.Nil(t, p)
	for _, w := range want {
		assert.Contains(t, diags.Error(), w)
	}
	return diags
}

// nestedInline is a pipeline whose one step is an inline pipeline
// component, depth levels deep, around a command step.
func nestedInline(depth int) []byte {
	var b strings.Builder
	b.WriteString("type: pipeline\njobs:\n")
	indent := "  "
	for range depth {
		fmt.Fprintf(&b, "%ss:\n%s  type: pipeline\n%s  component:\n%s    jobs:\n", indent, indent, indent, indent)
		indent += "      "
	}
	fmt.Fprintf(&b, "%shello:\n%s  command: echo hi\n", indent, indent)
	return []byte(b.String())
}

// chainFiles are n component files, each but the last a pipeline using
// the next one uses times, and p.yml using the first.
func chainFiles(n, uses int) map[string][]byte {
	files := map[string][]byte{"p.yml": []byte("type: pipeline\njobs:\n  top:\n    component: c0.yml\n")}
	for i := range n - 1 {
		var b strings.Builder
		b.WriteString("type: pipeline\njobs:\n")
		for j := range uses {
			fmt.Fprintf(&b, "  j%d:\n    component: c%d.yml\n", j, i+1)
		}
		files[fmt.Sprintf("c%d.yml", i)] = []byte(b.String())
	}
	files[fmt.Sprintf("c%d.yml", n-1)] = []byte("type: command\ncommand: echo hi\nenvironment: {image: python}\n")
	return files
}

// manyInputs is a pipeline whose one step binds n inputs.
func manyInputs(n int) []byte {
	var b strings.Builder
	b.WriteString("type: pipeline\njobs:\n  s:\n    command: echo hi\n    inputs:\n")
	for i := range n {
		fmt.Fprintf(&b, "      i%d: %d\n", i, i)
	}
	return []byte(b.String())
}

func TestExpansionLimits(t *testing.T) {
	t.Run("steps", func(t *testing.T) {
		// 5^9 (about 2 million) command steps out of ten files of a few
		// lines: refused at the 10,001st step.
		read := memFS(chainFiles(10, 5))
		refused(t, "p.yml", Options{ReadFile: read}, "the pipeline has more than 10000 steps", "PORCH_MAX_STEPS=N")

		read = memFS(chainFiles(3, 2))
		_, diags := Compile("p.yml", Options{ReadFile: read, Limits: Limits{MaxSteps: 7}})
		require.False(t, diags.HasErrors(), "7 steps: 1 + 2 + 4: %s", diags.Error())
		refused(t, "p.yml", Options{ReadFile: read, Limits: Limits{MaxSteps: 6}},
			`c1.yml:5:3: error: the pipeline has more than 6 steps (step "top/j1/j1" is one too many)`)
	})
	t.Run("depth", func(t *testing.T) {
		read := memFS(map[string][]byte{"p.yml": nestedInline(20)})
		_, diags := Compile("p.yml", Options{ReadFile: read})
		require.False(t, diags.HasErrors(), diags.Error())
		read = memFS(map[string][]byte{"p.yml": nestedInline(21)})
		refused(t, "p.yml", Options{ReadFile: read}, "nests pipeline components more than 20 deep", "PORCH_MAX_DEPTH=N")
	})
	t.Run("depth of a component used deeper than where it was first read", func(t *testing.T) {
		read := memFS(map[string][]byte{
			"p.yml": []byte("type: pipeline\njobs:\n  x:\n    component: b.yml\n  y:\n    component: a.yml\n"),
			"a.yml": []byte("type: pipeline\njobs:\n  inner:\n    component: b.yml\n"),
			"b.yml": []byte("type: pipeline\njobs:\n  hello:\n    command: echo hi\n"),
		})
		_, diags := Compile("p.yml", Options{ReadFile: read, Limits: Limits{MaxDepth: 2}})
		require.False(t, diags.HasErrors(), diags.Error())
		refused(t, "p.yml", Options{ReadFile: read, Limits: Limits{MaxDepth: 1}},
			`a.yml:3:3: error: step "y/inner" nests pipeline components more than 1 deep`)
	})
	t.Run("inputs of one step", func(t *testing.T) {
		read := memFS(map[string][]byte{"p.yml": manyInputs(1000)})
		_, diags := Compile("p.yml", Options{ReadFile: read})
		require.False(t, diags.HasErrors(), diags.Error())
		read = memFS(map[string][]byte{"p.yml": manyInputs(1001)})
		refused(t, "p.yml", Options{ReadFile: read},
			"p.yml:1006:7: error: inputs has more than 1000 entries", "PORCH_MAX_INPUTS=N")
	})
	t.Run("outputs of one component", func(t *testing.T) {
		data := "type: pipeline\njobs:\n  s:\n    command: echo hi\n    outputs:\n      a:\n      b:\n      c:\n"
		read := memFS(map[string][]byte{"p.yml": []byte(data)})
		refused(t, "p.yml", Options{ReadFile: read, Limits: Limits{MaxInputs: 2}}, "p.yml:8:7: error: outputs has more than 2 entries")
	})
	t.Run("inputs of the plan", func(t *testing.T) {
		// A component of two inputs used by four steps: eight plan inputs.
		read := memFS(map[string][]byte{
			"p.yml": []byte("type: pipeline\njobs:\n  a: {component: c.yml}\n  b: {component: c.yml}\n" +
				"  c: {component: c.yml}\n  d: {component: c.yml}\n"),
			"c.yml": []byte("type: command\ncommand: echo ${{inputs.x}} ${{inputs.y}}\nenvironment: {image: python}\n" +
				"inputs:\n  x: {type: string, default: x}\n  y: {type: string, default: y}\n"),
		})
		_, diags := Compile("p.yml", Options{ReadFile: read, Limits: Limits{MaxPlanInputs: 8}})
		require.False(t, diags.HasErrors(), diags.Error())
		refused(t, "p.yml", Options{ReadFile: read, Limits: Limits{MaxPlanInputs: 7}},
			`p.yml:6:3: error: the plan's steps have more than 7 inputs (step "d" has one too many)`, "PORCH_MAX_PLAN_INPUTS=N")
	})
}

func TestAliasLimits(t *testing.T) {
	t.Run("inline pipeline components", func(t *testing.T) {
		refused(t, filepath.Join("testdata", "TestDiagnostics", "alias_bomb.yml"), Options{},
			"YAML aliases repeat more than 100000 nodes", "PORCH_MAX_ALIAS_NODES=N")
	})
	t.Run("merge keys", func(t *testing.T) {
		var b strings.Builder
		b.WriteString("type: pipeline\nx:\n  m0: &m0 {a: 1, b: 2, c: 3, d: 4}\n")
		for i := 1; i <= 8; i++ {
			fmt.Fprintf(&b, "  m%d: &m%d\n", i, i)
			for range 12 {
				fmt.Fprintf(&b, "    <<: *m%d\n", i-1)
			}
		}
		b.WriteString("jobs:\n  s:\n    command: echo hi\n    environment_variables: *m8\n")
		read := memFS(map[string][]byte{"p.yml": []byte(b.String())})
		refused(t, "p.yml", Options{ReadFile: read}, "YAML aliases repeat more than 100000 nodes")
	})
	t.Run("an alias inside its own anchor", func(t *testing.T) {
		read := memFS(map[string][]byte{"p.yml": []byte(
			"type: pipeline\njobs: &j\n  s:\n    type: pipeline\n    component:\n      jobs: *j\n")})
		refused(t, "p.yml", Options{ReadFile: read}, `p.yml:6:13: error: YAML alias "j" is inside its own anchor`)
	})
	t.Run("a few aliases pass", func(t *testing.T) {
		read := memFS(map[string][]byte{"p.yml": []byte("type: pipeline\nx: &env {A: '1', B: '2'}\njobs:\n" +
			"  a: {command: echo a, environment_variables: *env}\n  b: {command: echo b, environment_variables: *env}\n")})
		_, diags := Compile("p.yml", Options{ReadFile: read, Limits: Limits{MaxAliasNodes: 10}})
		require.False(t, diags.HasErrors(), diags.Error())
		refused(t, "p.yml", Options{ReadFile: read, Limits: Limits{MaxAliasNodes: 9}}, "p.yml:5:47: error: YAML aliases repeat more than 9 nodes")
	})
}

// pipelineUsing writes a pipeline whose one step's component is ref.
func pipelineUsing(t *testing.T, ref string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "p.yml")
	require.NoError(t, os.WriteFile(p, []byte("type: pipeline\njobs:\n  s:\n    component: "+ref+"\n"), 0o644))
	return p
}

func TestReadsRegularFilesOnly(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo.yml")
	require.NoError(t, syscall.Mkfifo(fifo, 0o600))
	sock := filepath.Join(dir, "sock.yml")
	l, err := net.Listen("unix", sock)
	require.NoError(t, err)
	defer l.Close()
	for ref, kind := range map[string]string{
		// Opening a FIFO blocked until a writer came, for ever.
		fifo: "a named pipe (FIFO)",
		sock: "a socket",
		dir:  "a folder",
		// /dev/zero and /dev/urandom grew porch's memory until the kernel
		// killed it.
		"/dev/zero":    "a device",
		"/dev/urandom": "a device",
	} {
		if _, err := os.Stat(ref); err != nil {
			continue
		}
		p := pipelineUsing(t, ref)
		refused(t, p, Options{}, fmt.Sprintf(`%s:4:16: error: referenced file %q is %s, not a regular file`, p, ref, kind),
			"porch reads regular files only")
		// The root file too.
		refused(t, ref, Options{}, fmt.Sprintf(`%s: error: file %q is %s, not a regular file`, ref, ref, kind))
	}
}

func TestFileSizeLimit(t *testing.T) {
	comp := filepath.Join(t.TempDir(), "c.yml")
	// Larger than the pipeline, which the limit must let through.
	data := "type: command\ncommand: echo hi\nenvironment: {image: python}\ndescription: " + strings.Repeat("x", 200) + "\n"
	require.NoError(t, os.WriteFile(comp, []byte(data), 0o644))
	p := pipelineUsing(t, comp)
	_, diags := Compile(p, Options{Limits: Limits{MaxFileBytes: int64(len(data))}})
	require.False(t, diags.HasErrors(), diags.Error())
	refused(t, p, Options{Limits: Limits{MaxFileBytes: int64(len(data)) - 1}},
		fmt.Sprintf(`referenced file %q is %d bytes, more than the limit of %d`, comp, len(data), len(data)-1),
		"PORCH_MAX_FILE_BYTES=N")
}

func TestTotalBytesLimit(t *testing.T) {
	// Four distinct components of 300 bytes: each passes MaxFileBytes,
	// together they pass MaxTotalBytes; one used twice counts once.
	pipeline := []byte("type: pipeline\njobs:\n  a:\n    component: a.yml\n  b:\n    component: b.yml\n" +
		"  c:\n    component: a.yml\n  d:\n    component: c.yml\n  e:\n    component: d.yml\n")
	read := memFS(map[string][]byte{"p.yml": pipeline,
		"a.yml": component300("a"), "b.yml": component300("b"), "c.yml": component300("c"), "d.yml": component300("d"),
	})
	root := int64(len(pipeline))
	_, diags := Compile("p.yml", Options{ReadFile: read, Limits: Limits{MaxTotalBytes: root + 4*300}})
	require.False(t, diags.HasErrors(), diags.Error())
	refused(t, "p.yml", Options{ReadFile: read, Limits: Limits{MaxTotalBytes: root + 3*300}},
		fmt.Sprintf(`p.yml:12:16: error: the pipeline's files hold more than %d bytes in all ("d.yml" is one too many)`, root+3*300),
		"use fewer or smaller component files, or raise the limit with PORCH_MAX_TOTAL_BYTES=N")
}

// component300 is a command component of 300 bytes.
func component300(name string) []byte {
	head := "type: command\ncommand: echo " + name + "\nenvironment: {image: python}\ndescription: "
	return []byte(head + strings.Repeat("x", 300-len(head)-1) + "\n")
}

func TestNoFileContentInMessages(t *testing.T) {
	const secret = "hunter2"
	read := memFS(map[string][]byte{
		"p.yml":      []byte("type: pipeline\njobs:\n  s:\n    component: shadow\n  t:\n    component: notes.txt\n"),
		"shadow":     []byte("root:$6$" + secret + ":19000:0:99999:7:::\ndaemon:*:19000:0:99999:7:::\n"),
		"notes.txt":  []byte("a line of notes\nthe password is " + secret + "\n"),
		"passwd.yml": []byte("root:x:0:0:" + secret + ":/root:/bin/bash\nbin:x:2:2:bin:/bin:/usr/sbin/nologin\n"),
	})
	diags := refused(t, "p.yml", Options{ReadFile: read},
		`p.yml:4:16: error: referenced file "shadow" is not a component: none of its 2 top-level keys is a component key`,
		"notes.txt:1:1: error: file is not a mapping: found text (a single scalar)")
	assert.Len(t, diags, 2, "one message a file: %s", diags.Error())
	assert.NotContains(t, diags.Error(), secret)
	assert.NotContains(t, diags.Error(), "daemon")

	diags = refused(t, "passwd.yml", Options{ReadFile: read}, "passwd.yml:1:1: error: file is not a mapping: found text")
	assert.NotContains(t, diags.Error(), secret)
}

func TestCompileStopsWhenCanceled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	read := memFS(map[string][]byte{"p.yml": chainYAML(3)})
	p, diags := CompileContext(ctx, "p.yml", Options{ReadFile: read})
	assert.Nil(t, p)
	assert.Equal(t, "p.yml: error: compilation stopped: context canceled", diags.Error())

	// Canceled while it reads the first component: it reads no other.
	ctx, cancel = context.WithCancel(context.Background())
	defer cancel()
	files := chainFiles(4, 3)
	var reads []string
	inner := memFS(files)
	read = func(name string) ([]byte, error) {
		reads = append(reads, name)
		if name == "c0.yml" {
			cancel()
		}
		return inner(name)
	}
	p, diags = CompileContext(ctx, "p.yml", Options{ReadFile: read})
	assert.Nil(t, p)
	assert.Equal(t, "p.yml: error: compilation stopped: context canceled", diags.Error())
	assert.Equal(t, []string{"p.yml", "c0.yml"}, reads)
}
