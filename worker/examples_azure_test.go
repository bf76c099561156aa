package worker_test

import (
	"context"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/bloberror"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/porch-pipelines/porch/activities/objectstore"
	"github.com/porch-pipelines/porch/activities/objectstore/azuritetest"
	"github.com/porch-pipelines/porch/compiler/plan"
	"github.com/porch-pipelines/porch/workflows"
)

// examples is the shared copy of azureml-examples' cli/jobs.
var examples = filepath.Join("..", "..", "shared", "azureml-examples", "cli", "jobs")

// copyExample copies an example's YAML files, unmodified, into a fresh
// folder: the shared copy lacks their code folders, which the test writes.
func copyExample(t *testing.T, rel string, files ...string) string {
	t.Helper()
	dir := t.TempDir()
	for _, f := range files {
		data, err := os.ReadFile(filepath.Join(examples, rel, f))
		if os.IsNotExist(err) {
			t.Skipf("no azureml-examples copy at %s", examples)
		}
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dir, f), data, 0o644))
	}
	return dir
}

// serveBlob puts body at container/name of account on Azurite, and gives
// workers the account's connection string alone: the example's URI names
// the real account, which the connection string points at Azurite.
func serveBlob(t *testing.T, account, container, name, body string) {
	t.Helper()
	srv, _ := azuritetest.Start(t, account)
	c, err := srv.Container(account, container)
	require.NoError(t, err)
	if _, err := c.Create(context.Background(), nil); err != nil && !bloberror.HasCode(err, bloberror.ContainerAlreadyExists) {
		require.NoError(t, err)
	}
	for _, k := range []string{objectstore.EnvStorageAccount, objectstore.EnvStorageKey, objectstore.EnvStorageSAS,
		"AZURE_TENANT_ID", "AZURE_CLIENT_ID", objectstore.EnvClientSecret} {
		t.Setenv(k, "")
	}
	t.Setenv(objectstore.EnvConnectionString, srv.ConnectionString(account))
	s, err := objectstore.Open(plan.Datastore{Type: plan.DatastoreAzureBlob, AccountName: account, ContainerName: container})
	require.NoError(t, err)
	upload(t, s, map[string]string{name: body})
}

// helloPy does what 4c_web_url_input's hello.py does: prints its input and
// copies it into its output folder.
const helloPy = `import argparse, os, shutil
p = argparse.ArgumentParser()
p.add_argument("--input_data")
p.add_argument("--input_string")
p.add_argument("--output_data")
a = p.parse_args()
print("sample_input_string:", a.input_string)
print("sample_input_data:", a.input_data)
os.makedirs(a.output_data, exist_ok=True)
shutil.copy(a.input_data, os.path.join(a.output_data, "Titanic.csv"))
`

// TestWebURLInputExampleReadsItsBlobThroughAConnectionString runs
// azureml-examples' 4c_web_url_input as it is: its input is
// https://dprepdata.blob.core.windows.net/demo/Titanic.csv, served by
// Azurite as the account dprepdata.
func TestWebURLInputExampleReadsItsBlobThroughAConnectionString(t *testing.T) {
	needPython(t)
	dir := copyExample(t, "pipelines-with-components/basics/4c_web_url_input", "pipeline.yml", "component.yml")
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "src"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "src", "hello.py"), []byte(helloPy), 0o644))
	titanic := "PassengerId,Survived,Pclass\n1,0,3\n2,1,1\n"
	serveBlob(t, "dprepdata", "demo", "Titanic.csv", titanic)
	h := newHarness(t, "cpu-cluster")
	runID, err := h.run(compile(t, filepath.Join(dir, "pipeline.yml"), nil))
	require.NoError(t, err)
	st := steps(t, runID)["hello_python_world_job"]
	require.Equal(t, workflows.StatusSucceeded, st.Status)
	for _, o := range st.Outputs {
		if o.Name == "sample_output_data" {
			got, err := os.ReadFile(filepath.Join(h.localPath(o.URI), "Titanic.csv"))
			require.NoError(t, err)
			assert.Equal(t, titanic, string(got))
			return
		}
	}
	t.Fatal("no sample_output_data output")
}

// irisMain does what the scikit-learn iris sweep's main.py does: trains an
// SVM with the trial's C, kernel and coef0 and logs training_f1_score.
const irisMain = `import argparse
import mlflow
import pandas as pd
from sklearn.metrics import f1_score
from sklearn.svm import SVC

p = argparse.ArgumentParser()
p.add_argument("--iris-csv", required=True)
p.add_argument("--C", type=float, default=1.0)
p.add_argument("--kernel", default="rbf")
p.add_argument("--coef0", type=float, default=0.0)
a = p.parse_args()
df = pd.read_csv(a.iris_csv)
X, y = df.drop(columns=["species"]), df["species"]
with mlflow.start_run():
    model = SVC(C=a.C, kernel=a.kernel, coef0=a.coef0).fit(X, y)
    mlflow.log_metric("training_f1_score", f1_score(y, model.predict(X), average="weighted"))
`

// irisCSV is an iris-like table: three species around three centres.
func irisCSV() string {
	var b strings.Builder
	b.WriteString("sepal_length,sepal_width,petal_length,petal_width,species\n")
	centres := map[string][4]float64{"setosa": {5.0, 3.4, 1.5, 0.2}, "versicolor": {5.9, 2.8, 4.3, 1.3}, "virginica": {6.6, 3.0, 5.6, 2.0}}
	for _, sp := range []string{"setosa", "versicolor", "virginica"} {
		c := centres[sp]
		for i := range 50 {
			d := 0.3 * math.Sin(float64(i)*1.7)
			fmt.Fprintf(&b, "%.2f,%.2f,%.2f,%.2f,%s\n", c[0]+d, c[1]-d/2, c[2]+d/2, c[3]+d/4, sp)
		}
	}
	return b.String()
}

// TestScikitLearnIrisSweepExampleReadsItsBlobThroughAConnectionString runs
// azureml-examples' single-step/scikit-learn/iris/job-sweep.yml as it is:
// its 20 trials read wasbs://datasets@azuremlexamples.blob.core.windows.net/iris.csv,
// served by Azurite as the account azuremlexamples.
func TestScikitLearnIrisSweepExampleReadsItsBlobThroughAConnectionString(t *testing.T) {
	needPython(t)
	python := os.Getenv("PORCH_PYTHON")
	if python == "" {
		python = "python3"
	}
	if err := execPython(python, "import pandas, sklearn"); err != nil {
		t.Skipf("the trials need pandas and scikit-learn (Debian's python3-pandas and python3-sklearn): %v", err)
	}
	dir := copyExample(t, "single-step/scikit-learn/iris", "job-sweep.yml")
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "src"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "src", "main.py"), []byte(irisMain), 0o644))
	serveBlob(t, "azuremlexamples", "datasets", "iris.csv", irisCSV())
	h := newHarness(t, "cpu-cluster")
	// 20 trials, each a Python that imports pandas and scikit-learn: about
	// two minutes of CPU on 2 cores.
	runID, err := h.runWithin(compile(t, filepath.Join(dir, "job-sweep.yml"), nil), 6*time.Minute)
	require.NoError(t, err)
	st := steps(t, runID)
	require.Len(t, st, 1)
	for stepPath := range st {
		v, err := temporalClient.QueryWorkflow(context.Background(), runID+"/"+stepPath, "", workflows.TrialsQuery)
		require.NoError(t, err)
		var p workflows.SweepProgress
		require.NoError(t, v.Get(&p))
		assert.Len(t, p.Trials, 20)
		best, value := p.Best()
		require.GreaterOrEqual(t, best, 0)
		assert.Greater(t, value, 0.0, "the trials trained on the blob's table")
	}
}

// execPython runs a line of Python.
func execPython(python, code string) error {
	return exec.Command(python, "-c", code).Run()
}
