package metrics

import (
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/porch-pipelines/porch/activities/internal/testpython"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// runScript runs a Python script in a fresh folder with porch's mlflow
// module from ShimDir on PYTHONPATH and env added, and returns the folder.
func runScript(t *testing.T, script string, env ...string) string {
	t.Helper()
	shim, err := ShimDir(filepath.Join(t.TempDir(), "cache"))
	require.NoError(t, err)
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "train.py"), []byte(script), 0o644))
	cmd := exec.Command(testpython.Interpreter(t), "train.py")
	cmd.Dir = dir
	cmd.Env = append(withoutKey(withoutKey(os.Environ(), FileEnv), "PYTHONPATH"), "PYTHONPATH="+shim)
	cmd.Env = append(cmd.Env, env...)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "train.py failed:\n%s", out)
	return dir
}

func readAll(t *testing.T, path string) []Record {
	t.Helper()
	r := &Reader{Path: path}
	recs, err := r.Next(0)
	require.NoError(t, err)
	assert.Zero(t, r.Malformed, "every line the module writes parses")
	return recs
}

// withoutTime drops the records' times, which the tests cannot know.
func withoutTime(recs []Record) []Record {
	out := make([]Record, len(recs))
	for i, r := range recs {
		r.Time = 0
		out[i] = r
	}
	return out
}

const everyCall = `
import json, os, sys
import mlflow, mlflow.sklearn, mlflow.pytorch, mlflow.tensorflow, mlflow.xgboost, mlflow.lightgbm, mlflow.keras
from mlflow.models.signature import infer_signature
from mlflow.tracking import MlflowClient
from mlflow.entities import Metric, Param, RunTag
from mlflow.exceptions import MlflowException

for f in (mlflow.autolog, mlflow.sklearn.autolog, mlflow.pytorch.autolog, mlflow.tensorflow.autolog,
          mlflow.xgboost.autolog, mlflow.lightgbm.autolog, mlflow.keras.autolog):
    assert f() is None
mlflow.set_tracking_uri("azureml://somewhere")
assert mlflow.get_tracking_uri() == "azureml://somewhere"
mlflow.set_experiment("exp")
assert mlflow.active_run() is None
with mlflow.start_run(run_name="train") as run:
    assert mlflow.active_run().info.run_id == run.info.run_id == os.environ["MLFLOW_RUN_ID"]
    mlflow.log_metric("loss", 0.5, step=1)
    mlflow.log_metric("loss", float("nan"))
    mlflow.log_metrics({"acc": 1, "inf": float("-inf")}, step=0)
    assert mlflow.log_param("lr", 0.1) == 0.1
    mlflow.log_params({"layers": [1, 2]})
    mlflow.set_tag("model", "cnn")
    mlflow.set_tags({"n": 3})
    with mlflow.start_run(nested=True) as child:
        assert child.info.run_id != run.info.run_id
        assert mlflow.active_run() is child
    assert mlflow.active_run() is run
    try:
        mlflow.start_run()
        sys.exit("a second run without nested=True must be refused")
    except MlflowException:
        pass
    try:
        mlflow.log_metric("bad", "high")
        sys.exit("a non-numeric metric must be refused")
    except MlflowException:
        pass
    mlflow.log_text("hello", "notes/a.txt")
    mlflow.log_dict({"a": 1}, "d.json")
    open("local.txt", "w").write("x")
    mlflow.log_artifact("local.txt", "files")
    assert infer_signature([1], [2]) is not None
    mlflow.sklearn.save_model({"w": 1}, "saved")
    mlflow.sklearn.log_model(sk_model={"w": 2}, artifact_path="model")
    assert mlflow.sklearn.load_model("saved") == {"w": 1}
    assert mlflow.pyfunc.load_model("runs:/x/model").unwrap_python_model() == {"w": 2}
    MlflowClient().log_batch(run.info.run_id, metrics=[Metric("z", 3, 0, 4)], params=[Param("p", 1)], tags=[RunTag("t", "u")])
assert mlflow.active_run() is None
`

func TestModuleLogsEveryCall(t *testing.T) {
	metricsFile := filepath.Join(t.TempDir(), FileName)
	dir := runScript(t, everyCall, FileEnv+"="+metricsFile, "MLFLOW_RUN_ID=run-1")
	got := withoutTime(readAll(t, metricsFile))
	nan := got[1].Value
	assert.NotEqual(t, nan, nan, "NaN round-trips")
	got[1].Value = 0
	assert.Equal(t, []Record{
		{Kind: KindMetric, Key: "loss", Value: 0.5, Step: 1, HasStep: true},
		{Kind: KindMetric, Key: "loss"},
		{Kind: KindMetric, Key: "acc", Value: 1, HasStep: true},
		{Kind: KindMetric, Key: "inf", Value: math.Inf(-1), HasStep: true},
		{Kind: KindParam, Key: "lr", Text: "0.1"},
		{Kind: KindParam, Key: "layers", Text: "[1, 2]"},
		{Kind: KindTag, Key: "model", Text: "cnn"},
		{Kind: KindTag, Key: "n", Text: "3"},
		{Kind: KindArtifact, Key: "notes/a.txt"},
		{Kind: KindArtifact, Key: "d.json"},
		{Kind: KindArtifact, Key: "files/local.txt"},
		{Kind: KindArtifact, Key: "model"},
		{Kind: KindMetric, Key: "z", Value: 3, Step: 4, HasStep: true},
		{Kind: KindParam, Key: "p", Text: "1"},
		{Kind: KindTag, Key: "t", Text: "u"},
	}, got)
	for _, f := range []string{"outputs/notes/a.txt", "outputs/d.json", "outputs/files/local.txt", "outputs/model/model.pkl", "outputs/model/MLmodel", "saved/model.pkl"} {
		assert.FileExists(t, filepath.Join(dir, f))
	}
	assert.Contains(t, readText(t, filepath.Join(dir, "saved/MLmodel")), "loader_module: mlflow.sklearn")
}

func readText(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return string(b)
}

func TestModuleWithoutFileWritesNothing(t *testing.T) {
	dir := runScript(t, `
import mlflow
with mlflow.start_run():
    mlflow.log_metric("loss", 0.5, step=1)
    mlflow.log_param("lr", 1)
    mlflow.set_tag("a", "b")
`)
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	assert.Equal(t, []string{"train.py"}, names, "nothing but the script: no metrics file anywhere")
}

func TestModuleConcurrentThreadsAndProcesses(t *testing.T) {
	metricsFile := filepath.Join(t.TempDir(), FileName)
	// 8 threads in each of 2 processes log 200 values each, with long keys
	// so lines are big enough to tear if writes interleaved.
	runScript(t, `
import os, threading, mlflow
pid = os.fork()
who = "child" if pid == 0 else "parent"
def work(i):
    for s in range(200):
        mlflow.log_metric(who + "-" + str(i) + "-" + "k" * 200, s, step=s)
threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
for t in threads: t.start()
for t in threads: t.join()
if pid == 0:
    os._exit(0)
os.waitpid(pid, 0)
`, FileEnv+"="+metricsFile)
	s := Collect(readAll(t, metricsFile))
	require.Len(t, s, 16)
	for key, pts := range s {
		require.Len(t, pts, 200, key)
		for i, p := range pts {
			assert.Equal(t, Point{Step: i, Value: float64(i)}, p, "each thread's values in order: %s", key)
		}
	}
}

func TestShimDirIsStableAndImportable(t *testing.T) {
	cache := filepath.Join(t.TempDir(), "cache")
	a, err := ShimDir(cache)
	require.NoError(t, err)
	b, err := ShimDir(cache)
	require.NoError(t, err)
	assert.Equal(t, a, b)
	assert.True(t, strings.HasPrefix(filepath.Base(a), "mlflow-shim-"))
	assert.FileExists(t, filepath.Join(a, "mlflow", "__init__.py"))
	assert.FileExists(t, filepath.Join(a, "mlflow", "_flavors.py"))

	// A cache folder that cannot be created is an error that says what to do.
	file := filepath.Join(t.TempDir(), "file")
	require.NoError(t, os.WriteFile(file, nil, 0o644))
	_, err = ShimDir(filepath.Join(file, "cache"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "set the cache folder to a writable place")
}
