package entryscript

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// pythonCandidates lists the interpreters tests may use, best first:
// PORCH_PYTHON, Debian's fast /usr/bin/python3, then python3 on PATH.
func pythonCandidates() []string {
	var out []string
	if p := os.Getenv("PORCH_PYTHON"); p != "" {
		out = append(out, p)
	}
	if _, err := os.Stat("/usr/bin/python3"); err == nil {
		out = append(out, "/usr/bin/python3")
	}
	if p, err := exec.LookPath("python3"); err == nil {
		out = append(out, p)
	}
	return out
}

func testPython(t testing.TB) string {
	t.Helper()
	c := pythonCandidates()
	if len(c) == 0 {
		t.Skip("no Python interpreter: set PORCH_PYTHON or install python3")
	}
	return c[0]
}

var pandasProbe sync.Map // interpreter -> bool

func hasPandas(python string) bool {
	if v, ok := pandasProbe.Load(python); ok {
		return v.(bool)
	}
	ok := exec.Command(python, "-c", "import pandas").Run() == nil
	pandasProbe.Store(python, ok)
	return ok
}

// pandasPython returns an interpreter that imports pandas, or skips.
func pandasPython(t testing.TB) string {
	t.Helper()
	for _, p := range pythonCandidates() {
		if hasPandas(p) {
			return p
		}
	}
	t.Skip("no Python interpreter with pandas: apt-get install -y python3-pandas, or set PORCH_PYTHON")
	return ""
}

// fixture is a code folder with an entry script, a logs folder and a
// scratch folder the scripts write their observations to.
type fixture struct {
	opts Options
	out  string // scratch folder, passed to scripts as $OUT
}

func newFixture(t testing.TB, script string) *fixture {
	t.Helper()
	root := t.TempDir()
	code, out := filepath.Join(root, "code"), filepath.Join(root, "out")
	require.NoError(t, os.MkdirAll(code, 0o755))
	require.NoError(t, os.MkdirAll(out, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(code, "score.py"), []byte(script), 0o644))
	return &fixture{out: out, opts: Options{
		Python:    testPython(t),
		Dir:       code,
		Script:    "score.py",
		Env:       append(os.Environ(), "OUT="+out),
		LogDir:    filepath.Join(root, "logs"),
		Node:      "node-1",
		KillGrace: 2 * time.Second,
		CacheDir:  filepath.Join(root, "cache"),
	}}
}

// pool returns a pool closed when the test ends.
func (f *fixture) pool(t testing.TB, size int) *Pool {
	t.Helper()
	p := NewPool(f.opts, size)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = p.Close(ctx)
	})
	return p
}

func (f *fixture) read(t testing.TB, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(f.out, name))
	require.NoError(t, err)
	return string(b)
}

func lines(s string) []string {
	s = strings.TrimRight(s, "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

func paths(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = "/data/file" + string(rune('a'+i)) + ".txt"
	}
	return out
}

func batchError(t testing.TB, err error, kind string) *BatchError {
	t.Helper()
	var be *BatchError
	require.True(t, errors.As(err, &be), "want a *BatchError, got %v", err)
	require.Equal(t, kind, be.Kind, "message: %s\ntraceback: %s", be.Message, be.Traceback)
	return be
}

// gone reports whether pid no longer runs (absent, or a zombie).
func gone(pid int) bool {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return true
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i >= 0 && len(s) > i+2 && (s[i+2] == 'Z' || s[i+2] == 'X')
}
