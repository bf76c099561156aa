package condafile

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParse(t *testing.T) {
	s, err := Parse("name: demo\nchannels: [conda-forge]\ndependencies:\n  - python=3.8\n  - pip\n  - pip:\n    - pyjokes\n    - requests>=2\n")
	require.NoError(t, err)
	assert.Equal(t, Spec{Conda: []string{"python=3.8", "pip"}, Pip: []string{"pyjokes", "requests>=2"}, Python: "3.8"}, s)
	assert.True(t, s.PipOnly())
	assert.Equal(t, "pyjokes\nrequests>=2\n", s.Requirements())

	s, err = Parse("dependencies:\n  - conda-forge::numpy>=1.26\n  - python\n")
	require.NoError(t, err)
	assert.False(t, s.PipOnly())
	assert.Equal(t, []string{"conda-forge::numpy>=1.26"}, s.CondaOnly())

	_, err = Parse("dependencies:\n  - {conda: [x]}\n")
	assert.ErrorContains(t, err, "a mapping other than pip")
}

// TestInstallScriptWithoutConda: a conda file needing conda packages
// fails with the packages named where there is no conda; without venv
// on a host, the worker's own Python is never written to.
func TestInstallScriptWithoutConda(t *testing.T) {
	dir := t.TempDir()
	s, _ := Parse("dependencies:\n  - numpy=1.26\n")
	script := filepath.Join(dir, "install.sh")
	require.NoError(t, os.WriteFile(script, []byte(InstallScript(s, dir, filepath.Join(dir, "env"), false)), 0o644))
	cmd := exec.Command("/bin/sh", script)
	cmd.Env = []string{"PATH=/usr/bin:/bin"}
	out, err := cmd.CombinedOutput()
	require.Error(t, err)
	assert.Contains(t, string(out), "the conda file needs conda packages (numpy=1.26) but there is no conda, mamba or micromamba here")

	s, _ = Parse("dependencies:\n  - pip:\n    - x\n")
	noVenv := filepath.Join(dir, "python3")
	require.NoError(t, os.WriteFile(noVenv, []byte("#!/bin/sh\n[ \"$1\" = -m ] && [ \"$2\" = venv ] && exit 1\necho \"ran $*\"\n"), 0o755))
	require.NoError(t, os.WriteFile(script, []byte(InstallScript(s, dir, filepath.Join(dir, "env"), false)), 0o644))
	cmd = exec.Command("/bin/sh", script)
	cmd.Env = []string{"PATH=/usr/bin:/bin", "PORCH_PYTHON=" + noVenv}
	out, err = cmd.CombinedOutput()
	require.Error(t, err)
	assert.Contains(t, string(out), "has no venv module")
	assert.False(t, strings.Contains(string(out), "ran -m pip"), "pip never ran in the worker's Python")
}
