package stepio

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const debianPython = "/usr/bin/python3"

func needDebianPython(t *testing.T) {
	t.Helper()
	if _, err := os.Stat(debianPython); err != nil {
		t.Skipf("needs %s: %v", debianPython, err)
	}
}

// executable runs `name -c ...` with env and returns sys.executable.
func executable(t *testing.T, env []string, name string) string {
	t.Helper()
	cmd := exec.Command("/bin/sh", "-c", name+` -c 'import sys; print(sys.executable)'`)
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	return strings.TrimSpace(string(out))
}

// TestPythonConfigured: the worker's configured Python is every step's
// python and python3, first on its PATH, and the note names it.
func TestPythonConfigured(t *testing.T) {
	needDebianPython(t)
	h := &Host{Home: t.TempDir(), Node: "n1", Interpreter: debianPython}
	sp := h.Python()
	assert.Equal(t, debianPython, sp.Exe)
	assert.Equal(t, filepath.Join(h.Home, "python"), filepath.Dir(filepath.Dir(sp.Bin)))
	other := &Host{Home: h.Home, Node: "n2", Interpreter: debianPython}
	assert.Equal(t, sp.Bin, other.Python().Bin, "workers of one home running one Python share its launchers")
	assert.Regexp(t, `^porch: python and python3 are /usr/bin/python3 \(Python 3\.\d+\.\d+\), the worker's configured Python`, sp.Note)
	env := sp.WithPython([]string{"HOME=/nowhere", "PATH=" + os.Getenv("PATH")})
	assert.Equal(t, "PATH="+sp.Bin+":"+os.Getenv("PATH"), env[len(env)-1])
	assert.Equal(t, debianPython, executable(t, env, "python"))
	assert.Equal(t, debianPython, executable(t, env, "python3"))
	assert.Equal(t, sp, h.Python(), "resolved once per worker")
}

// TestPythonOnlyPython3: without a configured Python, a PATH with only
// python3 still gives steps a python, as Azure's images do.
func TestPythonOnlyPython3(t *testing.T) {
	needDebianPython(t)
	dir := t.TempDir()
	require.NoError(t, os.Symlink(debianPython, filepath.Join(dir, "python3")))
	t.Setenv("PATH", dir)
	h := &Host{Home: t.TempDir(), Node: "n2"}
	sp := h.Python()
	assert.Equal(t, filepath.Join(dir, "python3"), sp.Exe)
	assert.Contains(t, sp.Note, "porch: python and python3 are "+sp.Exe+" (Python 3.")
	assert.Contains(t, sp.Note, "python3 on the worker's PATH")
	env := sp.WithPython([]string{"PATH=" + dir})
	got := executable(t, env, "python")
	real, err := filepath.EvalSymlinks(got)
	require.NoError(t, err)
	want, err := filepath.EvalSymlinks(debianPython)
	require.NoError(t, err)
	assert.Equal(t, want, real)
}

// TestPythonMissing: a configured Python that is not there leaves PATH
// alone and says so in the step's log.
func TestPythonMissing(t *testing.T) {
	h := &Host{Home: t.TempDir(), Node: "n3", Interpreter: "/no/such/python"}
	sp := h.Python()
	assert.Empty(t, sp.Bin)
	assert.Contains(t, sp.Note, `porch: the worker's Python "/no/such/python" cannot be run`)
	env := []string{"PATH=/usr/bin"}
	assert.Equal(t, env, sp.WithPython(env))
}

// TestPipIsTheStepsPython: pip and pip3 in a step are its Python's own
// (-m pip), whatever pip the PATH holds: pip install x && python ...
// installs where python looks.
func TestPipIsTheStepsPython(t *testing.T) {
	needDebianPython(t)
	dir := t.TempDir()
	// A pip of another interpreter first on the worker's PATH.
	require.NoError(t, os.WriteFile(filepath.Join(dir, "pip"), []byte("#!/bin/sh\necho wrong pip\n"), 0o755))
	h := &Host{Home: t.TempDir(), Node: "n1", Interpreter: debianPython}
	env := h.Python().WithPython([]string{"PATH=" + dir + ":" + os.Getenv("PATH")})
	for _, pip := range []string{"pip", "pip3"} {
		cmd := exec.Command("/bin/sh", "-c", pip+" --version")
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s", out)
		assert.Contains(t, string(out), "(python 3.", pip)
		assert.NotContains(t, string(out), "wrong pip")
		assert.Contains(t, string(out), "/usr/lib/python3/dist-packages/pip", "%s is Debian's python3's pip", pip)
	}
}
