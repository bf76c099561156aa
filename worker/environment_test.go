package worker_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/porch-pipelines/porch/activities/launch"
	"github.com/porch-pipelines/porch/activities/launch/imagetest"
	"github.com/porch-pipelines/porch/worker"
	"github.com/porch-pipelines/porch/workflows"
)

// examples is the shared copy of azureml-examples' cli/jobs.
var examples = filepath.Join("..", "..", "shared", "azureml-examples", "cli", "jobs")

// podmanHarness is a harness whose worker runs steps in containers.
func podmanHarness(t *testing.T, computes ...string) *harness {
	t.Helper()
	imagetest.RequirePodman(t)
	rt, err := launch.Resolve(launch.Podman, launch.LookPath)
	require.NoError(t, err)
	h := &harness{t: t, home: t.TempDir()}
	w, err := worker.Start(temporalClient, worker.Options{Home: h.home, Computes: append([]string{""}, computes...), Workflows: true, Runtime: rt})
	require.NoError(t, err)
	t.Cleanup(w.Stop)
	return h
}

// mirror serves image as ref from a registry on loopback that podman
// reaches for mcr.microsoft.com, as an offline fleet's mirror, and removes
// the pulled image at the end so the next run pulls again.
func mirror(t *testing.T, image, ref string) {
	t.Helper()
	reg := imagetest.Registry(t)
	imagetest.RegistriesConf(t, reg, map[string]string{"mcr.microsoft.com": reg})
	imagetest.Push(t, image, reg+strings.TrimPrefix(ref, "mcr.microsoft.com"))
	imagetest.Remove(t, ref)
	t.Cleanup(func() { imagetest.Remove(t, ref) })
}

// TestExampleCondaFileRunsUnmodified runs 5c_env_conda_file as it is: its
// image comes from a mirror on loopback, pyjokes from a package index on
// loopback, installed into the derived image.
func TestExampleCondaFileRunsUnmodified(t *testing.T) {
	file := filepath.Join(examples, "pipelines-with-components", "basics", "5c_env_conda_file", "pipeline.yml")
	if _, err := os.Stat(file); err != nil {
		t.Skip("../shared/azureml-examples is absent")
	}
	h := podmanHarness(t, "cpu-cluster")
	mirror(t, imagetest.Python(t, imagetest.PythonPackages...), "mcr.microsoft.com/azureml/openmpi5.0-cuda12.4-ubuntu22.04:latest")
	wheel, data := imagetest.Wheel(t, "pyjokes", "0.6.0", "def get_joke():\n    return 'a joke from the loopback index'\n")
	imagetest.Index(t, map[string][]byte{wheel: data})
	p := compile(t, file, nil)
	// The conda file's hash names the derived image: a comment of this
	// run's keeps an earlier run's image from standing in for the build.
	p.Pipeline.Steps[0].Command.Env.Conda += "# " + t.TempDir() + "\n"
	id, err := h.run(p)
	require.NoError(t, err, userLogs(t, h, id))
	for path, s := range steps(t, id) {
		require.Equal(t, workflows.StatusSucceeded, s.Status, path)
	}
	logs := userLogs(t, h, id)
	assert.Contains(t, logs, "a joke from the loopback index")
	assert.Contains(t, logs, "porch: the step runs in image mcr.microsoft.com/azureml/openmpi5.0-cuda12.4-ubuntu22.04:latest + conda file ")
	assert.Contains(t, logs, "porch: building the conda environment on image mcr.microsoft.com/azureml/openmpi5.0-cuda12.4-ubuntu22.04:latest")
}

// TestExampleNycTaxiRunsUnmodified runs nyc_taxi_data_regression as it
// is: its curated environment's image (azureml/curated/sklearn-1.5) comes
// from a mirror on loopback, with pandas, scikit-learn and
// typing_extensions, which the worker's Python lacks.
func TestExampleNycTaxiRunsUnmodified(t *testing.T) {
	file := filepath.Join(examples, "pipelines-with-components", "nyc_taxi_data_regression", "pipeline.yml")
	if _, err := os.Stat(file); err != nil {
		t.Skip("../shared/azureml-examples is absent")
	}
	h := podmanHarness(t, "cpu-cluster")
	// Azure's images have python as well as python3.
	py := imagetest.Derive(t, imagetest.Python(t, imagetest.PythonPackages...), []string{"RUN ln -s python3 /usr/bin/python"}, nil)
	mirror(t, py, "mcr.microsoft.com/azureml/curated/sklearn-1.5:latest")
	id, err := h.run(compile(t, file, nil))
	require.NoError(t, err, userLogs(t, h, id))
	st := steps(t, id)
	require.Len(t, st, 5)
	for path, s := range st {
		require.Equal(t, workflows.StatusSucceeded, s.Status, path)
	}
	assert.Contains(t, userLogs(t, h, id), "porch: the step runs in image mcr.microsoft.com/azureml/curated/sklearn-1.5:latest")
}

// userLogs are the user_logs of every step of a run, one after the other.
func userLogs(t *testing.T, h *harness, runID string) string {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(h.home, "datastores", "workspaceblobstore", "azureml", runID, "*", "artifacts", "user_logs", "*.txt"))
	var b strings.Builder
	for _, f := range files {
		data, _ := os.ReadFile(f)
		b.WriteString("== " + f + "\n" + string(data))
	}
	return b.String()
}
