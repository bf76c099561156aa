package metrics

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/porch-pipelines/porch/activities/internal/testpython"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestExtendPutsShimFirstWhenNoMlflow(t *testing.T) {
	python := testpython.Interpreter(t)
	cache := filepath.Join(t.TempDir(), "cache")
	other := t.TempDir()
	metricsFile := filepath.Join(t.TempDir(), FileName)
	base := []string{"PATH=" + os.Getenv("PATH"), "PYTHONPATH=/stale", "PYTHONPATH=" + other}

	env, err := Extend(base, python, metricsFile, cache)
	require.NoError(t, err)
	shim, err := ShimDir(cache)
	require.NoError(t, err)
	assert.Equal(t, append(base[:3:3], FileEnv+"="+metricsFile, "PYTHONPATH="+shim+":"+other), env,
		"the shim goes before the step's own PYTHONPATH (its last entry), which it keeps")

	// The environment Extend returns makes a script's mlflow calls land in
	// the metrics file.
	dir := t.TempDir()
	cmd := exec.Command(python, "-c", "import mlflow\nwith mlflow.start_run():\n    mlflow.log_metric('loss', 0.5, step=1)")
	cmd.Dir, cmd.Env = dir, env
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	recs, _, err := Read(metricsFile, 0, 0)
	require.NoError(t, err)
	require.Len(t, recs, 1)
	assert.Equal(t, "loss", recs[0].Key)
}

func TestExtendLeavesRealMlflowAlone(t *testing.T) {
	python := testpython.Interpreter(t)
	// A package named mlflow on the step's PYTHONPATH stands for a real
	// mlflow install: porch's module must not shadow it.
	real := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(real, "mlflow"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(real, "mlflow", "__init__.py"), []byte("REAL = True\n"), 0o644))
	metricsFile := filepath.Join(t.TempDir(), FileName)

	env, err := Extend([]string{"PYTHONPATH=" + real}, python, metricsFile, filepath.Join(t.TempDir(), "cache"))
	require.NoError(t, err)
	assert.Equal(t, []string{"PYTHONPATH=" + real, FileEnv + "=" + metricsFile}, env)

	t.Setenv("PYTHONPATH", real)
	add, err := Env(python, metricsFile, filepath.Join(t.TempDir(), "cache"))
	require.NoError(t, err)
	assert.Equal(t, []string{FileEnv + "=" + metricsFile}, add)
}

func TestEnvWithoutPythonStillNamesFile(t *testing.T) {
	t.Setenv("PYTHONPATH", "")
	cache := filepath.Join(t.TempDir(), "cache")
	// An interpreter that cannot start has no mlflow: the module goes on
	// PYTHONPATH, harmless to a step that runs no Python.
	add, err := Env(filepath.Join(t.TempDir(), "no-python"), "/m.jsonl", cache)
	require.NoError(t, err)
	shim, err := ShimDir(cache)
	require.NoError(t, err)
	assert.Equal(t, []string{FileEnv + "=/m.jsonl", "PYTHONPATH=" + shim}, add)

	// A cache folder that cannot be written still names the metrics file.
	file := filepath.Join(t.TempDir(), "file")
	require.NoError(t, os.WriteFile(file, nil, 0o644))
	env, err := Extend([]string{"A=1"}, filepath.Join(t.TempDir(), "no-python"), "/m.jsonl", filepath.Join(file, "cache"))
	require.Error(t, err)
	assert.Equal(t, []string{"A=1", FileEnv + "=/m.jsonl"}, env)
}
