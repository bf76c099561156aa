package metrics

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/porch-pipelines/porch/activities/internal/testpython"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// needSklearn skips the test unless the tests' Python imports scikit-learn.
func needSklearn(t *testing.T) {
	t.Helper()
	python := testpython.Interpreter(t)
	if err := exec.Command(python, "-c", "import sklearn").Run(); err != nil {
		t.Skipf("%s cannot import sklearn: install scikit-learn for it (Debian: apt-get install python3-sklearn) to test autolog", python)
	}
}

// TestAutologSklearnNamesLikeMLflow runs testdata/autolog.py, which calls
// mlflow.autolog() before importing sklearn, and checks what porch's module
// logged against the names MLflow's sklearn autologging uses and the values
// the script computed with sklearn's unpatched functions.
func TestAutologSklearnNamesLikeMLflow(t *testing.T) {
	needSklearn(t)
	script, err := os.ReadFile(filepath.Join("testdata", "autolog.py"))
	require.NoError(t, err)
	metricsFile := filepath.Join(t.TempDir(), FileName)
	dir := runScript(t, string(script), FileEnv+"="+metricsFile)
	var want map[string]map[string]float64
	require.NoError(t, json.Unmarshal([]byte(readText(t, filepath.Join(dir, "expected.json"))), &want))

	models := map[string]string{"SVC": "svc", "Pipeline": "pipe", "LinearRegression": "reg"}
	keys := map[string][]string{}
	params := map[string]map[string]string{}
	var names, classes []string
	model := ""
	for _, r := range readAll(t, metricsFile) {
		switch {
		case r.Kind == KindParam:
			// Parameters come before their estimator's tags.
			if params[""] == nil {
				params[""] = map[string]string{}
			}
			params[""][r.Key] = r.Text
		case r.Kind == KindTag && r.Key == "estimator_name":
			names = append(names, r.Text)
			model = models[r.Text]
			params[model], params[""] = params[""], nil
		case r.Kind == KindTag && r.Key == "estimator_class":
			classes = append(classes, r.Text)
		case r.Kind == KindMetric:
			require.NotEmpty(t, model, "metric %q before any estimator's tags", r.Key)
			keys[model] = append(keys[model], r.Key)
			if assert.Contains(t, want[model], r.Key, "%s: unexpected metric", model) {
				assert.InDelta(t, want[model][r.Key], r.Value, 1e-9, "%s: %s", model, r.Key)
			}
		}
	}
	assert.Equal(t, []string{"SVC", "Pipeline", "LinearRegression"}, names,
		"one estimator per outermost fit: not the Pipeline's steps, not the fit after autolog(disable=True)")
	assert.Equal(t, []string{"sklearn.svm._classes.SVC", "sklearn.pipeline.Pipeline", "sklearn.linear_model._base.LinearRegression"}, classes)
	assert.Equal(t, []string{
		"training_precision_score", "training_recall_score", "training_f1_score", "training_accuracy_score", "training_score",
		"f1_score_X_test", "f1_score-2_X_test", "accuracy_score_unknown_dataset", "SVC_score_X_test",
	}, keys["svc"], "SVC without probability=True has no predict_proba: no log loss, no ROC AUC")
	assert.Equal(t, []string{
		"training_precision_score", "training_recall_score", "training_f1_score", "training_accuracy_score",
		"training_log_loss", "training_roc_auc", "training_score", "accuracy_score-2_X_test",
	}, keys["pipe"])
	assert.Equal(t, []string{
		"training_mean_squared_error", "training_mean_absolute_error", "training_r2_score",
		"training_root_mean_squared_error", "training_score",
	}, keys["reg"])
	assert.Equal(t, "0.7", params["svc"]["C"])
	assert.Equal(t, "linear", params["svc"]["kernel"])
	assert.Equal(t, "0.2", params["svc"]["coef0"])
	assert.Equal(t, "1.0", params["pipe"]["lr__C"], "a Pipeline's parameters are deep")
	assert.Equal(t, "True", params["reg"]["fit_intercept"])
}
