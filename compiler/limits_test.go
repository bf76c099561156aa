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
	files[fmt.Sprintf("c%d.yml", n-1)] = []byte("type: command\ncommand: echo hi\n")
	return files
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
	data := "type: command\ncommand: echo hi\ndescription: " + strings.Repeat("x", 200) + "\n"
	require.NoError(t, os.WriteFile(comp, []byte(data), 0o644))
	p := pipelineUsing(t, comp)
	_, diags := Compile(p, Options{Limits: Limits{MaxFileBytes: int64(len(data))}})
	require.False(t, diags.HasErrors(), diags.Error())
	refused(t, p, Options{Limits: Limits{MaxFileBytes: int64(len(data)) - 1}},
		fmt.Sprintf(`referenced file %q is %d bytes, more than the limit of %d`, comp, len(data), len(data)-1),
		"PORCH_MAX_FILE_BYTES=N")
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
