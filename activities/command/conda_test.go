package command

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/porch-pipelines/porch/activities/launch/imagetest"
	"github.com/porch-pipelines/porch/compiler/plan"
)

// jokesConda is 5c_env_conda_file's conda file.
const jokesConda = "name: demo_env\nchannels:\n  - conda-forge\ndependencies:\n  - python=3.8\n  - pip\n  - pip:\n    - pyjokes\n"

// jokesIndex serves a pyjokes wheel built here from a package index on
// loopback.
func jokesIndex(t *testing.T) (string, func(string) int) {
	t.Helper()
	file, data := imagetest.Wheel(t, "pyjokes", "0.6.0", "def get_joke():\n    return 'a joke from the loopback index'\n")
	return file, imagetest.Index(t, map[string][]byte{file: data})
}

// TestCondaFileInImageOnceForTwoSteps: a conda file with a pip dependency
// on an image is installed once, into a derived image both steps run in.
func TestCondaFileInImageOnceForTwoSteps(t *testing.T) {
	env, a := podmanEnv(t)
	imagetest.RemoveNew(t, "localhost/porch-env")
	wheel, downloads := jokesIndex(t)
	// A conda file of its own, so that no earlier run's image is reused.
	conda := jokesConda + "# " + uniqueRun(t) + "\n"
	base := imagetest.Python(t, imagetest.PythonPackages...)
	for i, step := range []string{"first", "second"} {
		in := imageStep(t, base, `python3 -c "import pyjokes; print(pyjokes.get_joke())"`)
		in.StepPath = step
		in.Command.Env.Conda, in.Command.Env.CondaFile = conda, "conda.yaml"
		res, err := runStep(env, in)
		require.NoError(t, err)
		log := readFile(t, filepath.Join(artifactsDir(a, in), "user_logs", "std_log.txt"))
		assert.Contains(t, log, "a joke from the loopback index")
		assert.True(t, strings.HasPrefix(res.Image.Ref, base+" + conda file conda.yaml (localhost/porch-env:"), res.Image.Ref)
		if i == 1 {
			assert.Contains(t, log, "is built already")
		}
	}
	assert.Equal(t, 1, downloads(wheel), "the wheel is installed once")
}

// TestCondaFileOnHostOnceForTwoSteps: on the host runtime the conda file
// is installed once under $PORCH_HOME/envs, in a venv of the worker's
// Python, which both steps run as python and pip.
func TestCondaFileOnHostOnceForTwoSteps(t *testing.T) {
	env, a := newEnv(t)
	if err := exec_(a.Python().Exe, "-m", "venv", "--help"); err != nil {
		t.Skipf("the worker's Python %s has no venv module", a.Python().Exe)
	}
	wheel, downloads := jokesIndex(t)
	for _, step := range []string{"first", "second"} {
		in := imageStep(t, "localhost/not-pulled:1", `python -c "import pyjokes; print(pyjokes.get_joke())" && pip --version`)
		in.StepPath = step
		in.Command.Env.Conda, in.Command.Env.CondaFile = jokesConda, "conda.yaml"
		_, err := runStep(env, in)
		require.NoError(t, err)
		log := readFile(t, filepath.Join(artifactsDir(a, in), "user_logs", "std_log.txt"))
		assert.Contains(t, log, "a joke from the loopback index")
		assert.Contains(t, log, "its conda file is, in "+filepath.Join(a.Home, "envs"))
		assert.Contains(t, log, filepath.Join(a.Home, "envs"), "pip is the environment's own")
	}
	assert.Equal(t, 1, downloads(wheel), "the wheel is installed once")
}

// TestCondaFileNeedingConda fails for good when neither the image nor
// the host has conda for a file that needs it.
func TestCondaFileNeedingConda(t *testing.T) {
	env, _ := newEnv(t)
	in := imageStep(t, "localhost/not-pulled:1", "true")
	in.Command.Env.Conda, in.Command.Env.CondaFile = "dependencies:\n  - numpy=1.26\n", "conda.yaml"
	_, err := runStep(env, in)
	appErr := appError(t, err)
	assert.True(t, appErr.NonRetryable())
	assert.Contains(t, appErr.Message(), "the conda file needs conda packages (numpy=1.26) but there is no conda, mamba or micromamba here")
}

// TestBuildContext: build: {path, dockerfile_path} builds the step's
// image from the context once; a second step reuses it.
func TestBuildContext(t *testing.T) {
	env, a := podmanEnv(t)
	imagetest.RemoveNew(t, "localhost/porch-build")
	ctx := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(ctx, "docker"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(ctx, "docker", "Dockerfile"),
		[]byte("FROM "+imagetest.Busybox(t)+"\nCOPY greeting.txt /greeting.txt\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(ctx, "greeting.txt"), []byte("built from "+uniqueRun(t)+"\n"), 0o644))
	for i := range 2 {
		in := imageStep(t, "", "cat /greeting.txt")
		in.Command.Env = &plan.Environment{Build: &plan.EnvironmentBuild{Context: ctx, Dockerfile: "docker/Dockerfile"}}
		_, err := runStep(env, in)
		require.NoError(t, err)
		log := readFile(t, filepath.Join(artifactsDir(a, in), "user_logs", "std_log.txt"))
		assert.Contains(t, log, "\nbuilt from h26-")
		if i == 1 {
			assert.Contains(t, log, "is built already")
		}
	}
}

func exec_(name string, args ...string) error {
	return exec.Command(name, args...).Run()
}
