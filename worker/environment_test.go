package worker_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/porch-pipelines/porch/activities/launch"
	"github.com/porch-pipelines/porch/activities/launch/imagetest"
	"github.com/porch-pipelines/porch/worker"
	"github.com/porch-pipelines/porch/workflows"
)

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
	imagetest.RemoveNew(t, "localhost/porch-env")
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

// TestSweepTrialsRunInContainers: each trial of a sweep runs in its
// environment's image, and its metrics reach the sweep.
func TestSweepTrialsRunInContainers(t *testing.T) {
	h := podmanHarness(t)
	img := imagetest.Derive(t, imagetest.Python(t, imagetest.PythonPackages...), []string{"RUN echo trial-image > /marker"}, nil)
	dir := t.TempDir()
	file := filepath.Join(dir, "sweep.yml")
	src := `type: sweep
name: sweep_env
outputs:
  o:
    type: uri_folder
trial:
  command: >-
    python3 -c "import mlflow; print(open('/marker').read().strip()); mlflow.log_metric('acc', ${{search_space.lr}})"
    && cp /marker ${{outputs.o}}/marker
  environment:
    image: ` + img + `
sampling_algorithm: grid
search_space:
  lr:
    type: choice
    values: [0.1, 0.2]
objective:
  primary_metric: acc
  goal: maximize
limits:
  max_total_trials: 2
`
	require.NoError(t, os.WriteFile(file, []byte(src), 0o644))
	id, err := h.run(compile(t, file, nil))
	require.NoError(t, err)
	st := steps(t, id)
	require.Equal(t, workflows.StatusSucceeded, st["sweep_env"].Status)
	assert.Equal(t, "best trial 1", st["sweep_env"].Detail, "the trial that logged 0.2 wins")
	var logs []string
	_ = filepath.Walk(filepath.Join(h.home, "datastores"), func(p string, info os.FileInfo, err error) error {
		if err == nil && info.Name() == "std_log.txt" {
			data, _ := os.ReadFile(p)
			logs = append(logs, string(data))
		}
		return nil
	})
	ran := 0
	for _, l := range logs {
		if strings.Contains(l, "porch: the step runs in image "+img) && strings.Contains(l, "\ntrial-image\n") {
			ran++
		}
	}
	assert.Equal(t, 2, ran, "both trials ran in the image")
}

// TestCancelledRunLeavesNoContainer: cancelling a run stops its step's
// container: none is left 5 s later.
func TestCancelledRunLeavesNoContainer(t *testing.T) {
	h := podmanHarness(t)
	file := filepath.Join(t.TempDir(), "sleep.yml")
	require.NoError(t, os.WriteFile(file, []byte("type: pipeline\nname: sleepy\njobs:\n  s:\n    command: sleep 300\n    environment:\n      image: "+imagetest.Busybox(t)+"\n"), 0o644))
	run := h.start(compile(t, file, nil))
	prefix := "porch-" + run.GetID() + "-s-"
	// Waits for the step's container to run.
	require.Eventually(t, func() bool { return len(imagetest.Running(t, prefix)) == 1 }, time.Minute, 100*time.Millisecond)
	require.NoError(t, temporalClient.CancelWorkflow(context.Background(), run.GetID(), ""))
	// Waits for the step to stop its container.
	assert.Eventually(t, func() bool { return len(imagetest.Running(t, prefix)) == 0 }, 5*time.Second, 100*time.Millisecond,
		"no container of the cancelled run 5 s later")
}
