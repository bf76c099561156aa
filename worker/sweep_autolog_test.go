package worker_test

import (
	"context"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/porch-pipelines/porch/activities/metrics"
	"github.com/porch-pipelines/porch/workflows"
)

// sklearnPython is the interpreter trials run on ($PORCH_PYTHON, which
// TestMain sets to Debian's python3) when it imports scikit-learn; else the
// test is skipped.
func sklearnPython(t *testing.T) string {
	t.Helper()
	python := os.Getenv("PORCH_PYTHON")
	if python == "" {
		t.Skip("no PORCH_PYTHON: the scikit-learn sweep needs a Python with scikit-learn (Debian: python3-sklearn)")
	}
	if err := exec.Command(python, "-c", "import sklearn").Run(); err != nil {
		t.Skipf("%s cannot import sklearn: install scikit-learn for it (Debian: apt-get install python3-sklearn) to run the scikit-learn sweep", python)
	}
	return python
}

// TestSweepOnAMetricOnlyAutologReports runs testdata/sklearn-sweep, a
// standalone sweep job shaped like azureml-examples' scikit-learn iris
// sweep: its trials log nothing but call mlflow.autolog(), and its primary
// metric is training_f1_score, which porch's mlflow module logs after the
// SVC's fit, as MLflow's sklearn autologging does.
func TestSweepOnAMetricOnlyAutologReports(t *testing.T) {
	python := sklearnPython(t)
	dir := t.TempDir()
	src := filepath.Join("testdata", "sklearn-sweep")
	require.NoError(t, os.CopyFS(dir, os.DirFS(src)))
	// The trial command runs `python`, as Azure ML's does: the worker's
	// Python ($PORCH_PYTHON), which has scikit-learn, whatever PATH finds.
	out, err := exec.Command(python, "-c", `import csv, sys
from sklearn.datasets import load_iris
iris = load_iris()
w = csv.writer(open(sys.argv[1], "w", newline=""))
w.writerow(["sepal_length", "sepal_width", "petal_length", "petal_width", "species"])
for x, y in zip(iris.data, iris.target):
    w.writerow(list(x) + [iris.target_names[y]])`, filepath.Join(dir, "iris.csv")).CombinedOutput()
	require.NoError(t, err, "write iris.csv: %s", out)

	h := newHarness(t, "cpu-cluster")
	runID, err := h.run(compile(t, filepath.Join(dir, "job-sweep.yml"), nil))
	require.NoError(t, err, "the sweep found its primary metric")
	v, err := temporalClient.QueryWorkflow(context.Background(), runID+"/sweep", "", workflows.TrialsQuery)
	require.NoError(t, err)
	var p workflows.SweepProgress
	require.NoError(t, v.Get(&p))
	require.Len(t, p.Trials, 4)
	lowest := math.Inf(1)
	for _, tr := range p.Trials {
		require.Equal(t, workflows.TrialCompleted, tr.Status, "trial %d: %s", tr.Trial, tr.Error)
		require.Len(t, tr.Points, 1, "trial %d reported training_f1_score once, after its one fit", tr.Trial)
		lowest = min(lowest, tr.Points[0].Value)
	}
	best, f1 := p.Best()
	require.GreaterOrEqual(t, best, 0)
	assert.Equal(t, lowest, f1, "goal minimize: the best trial has the lowest training_f1_score")
	assert.Greater(t, f1, 0.5)
	assert.LessOrEqual(t, f1, 1.0)

	// What autolog logged in the best trial is about the SVC that trial built.
	file := filepath.Join(h.localPath(fmt.Sprintf("azureml://datastores/workspaceblobstore/paths/azureml/%s/sweep/trial-%d/artifacts/", runID, best)), metrics.FileName)
	recs, _, err := metrics.Read(file, 0, 0)
	require.NoError(t, err)
	got := map[string]metrics.Record{}
	for _, r := range recs {
		got[r.Kind+" "+r.Key] = r
	}
	params := p.Trials[best].Params
	for _, name := range []string{"C", "coef0"} {
		want, ok := params.Get(name)
		require.True(t, ok, name)
		logged, err := strconv.ParseFloat(got["param "+name].Text, 64)
		require.NoError(t, err, "param %q", name)
		assert.InDelta(t, want.Number, logged, 1e-9, "param %q", name)
	}
	kernel, _ := params.Get("kernel")
	assert.Equal(t, kernel.Text, got["param kernel"].Text)
	assert.Equal(t, "SVC", got["tag estimator_name"].Text)
	assert.Equal(t, f1, got["metric training_f1_score"].Value)
	for _, key := range []string{"training_precision_score", "training_recall_score", "training_accuracy_score", "training_score", "SVC_score_X_test"} {
		assert.Contains(t, got, "metric "+key)
	}
}
