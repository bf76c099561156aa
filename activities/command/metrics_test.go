package command

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/porch-pipelines/porch/activities/internal/testpython"
	"github.com/porch-pipelines/porch/activities/metrics"
	"github.com/porch-pipelines/porch/compiler/plan"
)

// mlflowScript is an Azure ML training script's way of reporting metrics;
// every rank of a distributed step reports its own.
const mlflowScript = `import os, mlflow
with mlflow.start_run():
    mlflow.log_param("rank", os.environ.get("RANK", "0"))
    mlflow.log_metric("loss", 0.5, step=1)
`

// metricsStep is a command step running mlflowScript with `python`, which
// is the worker's Python (a's, set to python as porch worker --python
// does).
func metricsStep(t *testing.T, a *Activities, python string) RunCommandInput {
	t.Helper()
	a.Interpreter = python
	code := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(code, "train.py"), []byte(mlflowScript), 0o644))
	in := stepInput(tmpl(txt(`python train.py`)))
	in.Command.Code = code
	return in
}

func TestRunCommandRecordsMlflowMetrics(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir()) // where porch's mlflow module is written
	env, a := newEnv(t)
	in := metricsStep(t, a, testpython.Interpreter(t))

	_, err := runStep(env, in)
	require.NoError(t, err)
	recs, _, err := metrics.Read(filepath.Join(artifactsDir(a, in), metrics.FileName), 0, 0)
	require.NoError(t, err)
	require.Len(t, recs, 2)
	assert.Equal(t, metrics.Record{Kind: metrics.KindParam, Key: "rank", Text: "0", Time: recs[0].Time}, recs[0])
	assert.Equal(t, metrics.Record{Kind: metrics.KindMetric, Key: "loss", Value: 0.5, Step: 1, HasStep: true, Time: recs[1].Time}, recs[1])
	log := readFile(t, filepath.Join(artifactsDir(a, in), "user_logs", "std_log.txt"))
	assert.Contains(t, log, "porch's mlflow module is on PYTHONPATH")
}

func TestRunCommandDistributedRanksShareMetricsFile(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	env, a := newEnv(t)
	in := metricsStep(t, a, testpython.Interpreter(t))
	in.Command.Resources.InstanceCount = 2
	in.Command.Distribution = &plan.Distribution{Type: "pytorch"}

	_, err := runStep(env, in)
	require.NoError(t, err)
	recs, _, err := metrics.Read(filepath.Join(artifactsDir(a, in), metrics.FileName), 0, 0)
	require.NoError(t, err)
	var ranks []string
	for _, r := range recs {
		if r.Kind == metrics.KindParam {
			ranks = append(ranks, r.Text)
		}
	}
	assert.ElementsMatch(t, []string{"0", "1"}, ranks)
	assert.Len(t, metrics.Collect(recs)["loss"], 2)
}

func TestRunCommandKeepsRealMlflow(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	env, a := newEnv(t)
	// A package named mlflow on the step's PYTHONPATH stands for a real
	// mlflow: it records nothing in porch's file, and porch must not
	// shadow it with its own module.
	real := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(real, "mlflow"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(real, "mlflow", "__init__.py"), []byte(`
import contextlib, os
@contextlib.contextmanager
def start_run():
    yield
def log_param(k, v):
    pass
def log_metric(k, v, step=None):
    open(os.path.join(os.environ["PORCH_METRICS_FILE"] + ".real"), "w").write(k)
`), 0o644))
	in := metricsStep(t, a, testpython.Interpreter(t))
	in.Command.EnvironmentVariables = map[string]string{"PYTHONPATH": real}

	_, err := runStep(env, in)
	require.NoError(t, err)
	file := filepath.Join(artifactsDir(a, in), metrics.FileName)
	assert.NoFileExists(t, file, "porch's module did not run")
	assert.Equal(t, "loss", readFile(t, file+".real"), "the real mlflow ran, and PORCH_METRICS_FILE was set")
	log := readFile(t, filepath.Join(artifactsDir(a, in), "user_logs", "std_log.txt"))
	assert.NotContains(t, log, "porch's mlflow module")
}
