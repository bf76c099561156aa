package command

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/worker"

	"github.com/porch-pipelines/porch/activities/launch"
	"github.com/porch-pipelines/porch/activities/launch/imagetest"
	"github.com/porch-pipelines/porch/activities/stepio"
	"github.com/porch-pipelines/porch/compiler/plan"
)

// podmanEnv is newEnv with the worker's runtime podman; it skips without
// podman.
func podmanEnv(t *testing.T) (*testsuite.TestActivityEnvironment, *Activities) {
	t.Helper()
	imagetest.RequirePodman(t)
	rt, err := launch.Resolve(launch.Podman, launch.LookPath)
	require.NoError(t, err)
	var s testsuite.WorkflowTestSuite
	env := s.NewTestActivityEnvironment()
	a := &Activities{Host: &stepio.Host{Home: t.TempDir(), KillGrace: 2 * time.Second, Runtime: rt}}
	a.Register(env)
	return env, a
}

// uniqueRun names a run whose containers no other test shares.
func uniqueRun(t *testing.T) string {
	return fmt.Sprintf("h26-%s-%d", strings.ToLower(strings.ReplaceAll(t.Name(), "/", "-")), time.Now().UnixNano()%1e6)
}

func imageStep(t *testing.T, image, line string) RunCommandInput {
	in := stepInput(tmpl(txt(line)))
	in.RunID = uniqueRun(t)
	in.Command.Env = &plan.Environment{Image: image}
	in.Command.Environment = "image " + image
	return in
}

// noContainers waits until no container of the run is left: removed at the
// end of the step, however it ended.
func noContainers(t *testing.T, run string, within time.Duration) {
	t.Helper()
	assert.Eventually(t, func() bool { return len(imagetest.Running(t, "porch-"+run)) == 0 }, within, 100*time.Millisecond,
		"no container of run %s left %v after the step ended", run, within)
}

// TestTwoStepsTwoImages: each step runs in its own image (a marker file)
// with a package the worker's Python lacks, and writes its output
// where the next step reads it.
func TestTwoStepsTwoImages(t *testing.T) {
	env, a := podmanEnv(t)
	py := imagetest.Python(t, imagetest.PythonPackages...)
	imgA := imagetest.Derive(t, py, []string{"RUN echo image-a > /marker"}, nil)
	imgB := imagetest.Derive(t, py, []string{"RUN echo image-b > /marker"}, nil)
	out := filepath.Join(a.Home, "datastores", "workspaceblobstore", "shared")
	for _, c := range []struct{ image, want string }{{imgA, "image-a"}, {imgB, "image-b"}} {
		in := imageStep(t, c.image, `python3 -c "import sklearn; print(open('/marker').read().strip(), sklearn.__name__)" > `)
		in.Command.Template = tmpl(txt(in.Command.Template.Source), outRef("out"), txt("/seen.txt"))
		in.Outputs = []plan.Output{{Name: "out", Type: "uri_folder", Path: "azureml://datastores/workspaceblobstore/paths/shared/" + c.want}}
		res, err := runStep(env, in)
		require.NoError(t, err)
		require.NotNil(t, res.Image)
		assert.Equal(t, c.image, res.Image.Ref)
		assert.Equal(t, c.want+" sklearn\n", readFile(t, filepath.Join(out, c.want, "seen.txt")))
		log := readFile(t, filepath.Join(artifactsDir(a, in), "user_logs", "std_log.txt"))
		assert.Contains(t, log, "porch: the step runs in image "+c.image)
		noContainers(t, in.RunID, 5*time.Second)
	}
	host := a.Python().Exe
	assert.Error(t, exec.Command(host, "-c", "import sklearn").Run(), "the worker's own Python, %s, lacks the package", host)
}

// TestContainerSeesNothingOfTheWorker: a step in a container cannot read
// the worker's home, a TLS key beside it, the porch home's other files,
// or the worker's credentials.
func TestContainerSeesNothingOfTheWorker(t *testing.T) {
	env, a := podmanEnv(t)
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("TEMPORAL_API_KEY", "secret-key")
	key := filepath.Join(home, ".config", "temporal", "client.key")
	require.NoError(t, os.MkdirAll(filepath.Dir(key), 0o700))
	require.NoError(t, os.WriteFile(key, []byte("PRIVATE KEY"), 0o600))
	config := filepath.Join(a.Home, "config.yaml")
	require.NoError(t, os.WriteFile(config, []byte("address: x\n"), 0o600))
	line := fmt.Sprintf(`for f in %s %s %s; do if cat "$f" 2>/dev/null; then echo "READ $f"; fi; done; `+
		`env | grep -c TEMPORAL_API_KEY; ls %s; echo "home=$HOME"`, key, config, home, a.Home)
	in := imageStep(t, imagetest.Busybox(t), line)
	_, err := runStep(env, in)
	require.NoError(t, err)
	log := readFile(t, filepath.Join(artifactsDir(a, in), "user_logs", "std_log.txt"))
	assert.NotContains(t, log, "READ /")
	assert.NotContains(t, log, "PRIVATE KEY")
	assert.NotContains(t, log, "secret-key")
	assert.Contains(t, log, "\n0\n", "no worker credential in the step's environment")
	assert.NotContains(t, log, "home="+home)
	// Of the porch home, only the folders holding the step's own are
	// there.
	assert.Contains(t, log, "\ndatastores\nwork\nhome=/\n")
}

// TestImagePulledFromRegistry: an image the worker does not have is
// pulled through the runtime (its registries.conf honoured), once.
func TestImagePulledFromRegistry(t *testing.T) {
	env, a := podmanEnv(t)
	reg := imagetest.Registry(t)
	imagetest.RegistriesConf(t, reg, nil)
	ref := reg + "/porch-test/busybox:1"
	imagetest.Push(t, imagetest.Busybox(t), ref)
	imagetest.Remove(t, ref)
	t.Cleanup(func() { imagetest.Remove(t, ref) })
	in := imageStep(t, ref, "echo pulled-and-ran")
	_, err := runStep(env, in)
	require.NoError(t, err)
	log := readFile(t, filepath.Join(artifactsDir(a, in), "user_logs", "std_log.txt"))
	assert.Contains(t, log, "porch: pulling image "+ref+" with podman")
	assert.Contains(t, log, "pulled-and-ran")
}

// TestUnpullableImageFailsAtOnce: the step fails for good, naming the
// image, the runtime's error and --runtime host.
func TestUnpullableImageFailsAtOnce(t *testing.T) {
	env, a := podmanEnv(t)
	reg := imagetest.Registry(t)
	imagetest.RegistriesConf(t, reg, nil)
	ref := reg + "/porch-test/missing:1"
	in := imageStep(t, ref, "echo never")
	_, err := runStep(env, in)
	appErr := appError(t, err)
	assert.True(t, appErr.NonRetryable())
	assert.Equal(t, stepio.InvalidStepType, appErr.Type())
	assert.Contains(t, appErr.Message(), `cannot pull image "`+ref+`" with podman`)
	assert.Contains(t, appErr.Message(), "manifest unknown")
	assert.Contains(t, appErr.Message(), "--runtime host")
	log := readFile(t, filepath.Join(artifactsDir(a, in), "user_logs", "std_log.txt"))
	assert.Contains(t, log, "--runtime host")
}

// TestHostRuntimeSaysTheEnvironmentIsNotApplied: on the host runtime the
// step runs as before, and its log and result say once that its
// environment was not applied.
func TestHostRuntimeSaysTheEnvironmentIsNotApplied(t *testing.T) {
	env, a := newEnv(t)
	in := imageStep(t, "localhost/not-pulled:1", "echo ran-on-host")
	res, err := runStep(env, in)
	require.NoError(t, err)
	assert.Nil(t, res.Image)
	assert.Equal(t, "this worker runs steps on its host (--runtime host): environment image localhost/not-pulled:1 is not applied; the step runs with what is installed on this host", res.EnvironmentNote)
	log := readFile(t, filepath.Join(artifactsDir(a, in), "user_logs", "std_log.txt"))
	assert.Equal(t, 1, strings.Count(log, "is not applied"), log)
	assert.Contains(t, log, "ran-on-host")
}

// TestContainerTimeoutStopsTheContainer: limits.timeout stops the
// container, not only the runtime's client.
func TestContainerTimeoutStopsTheContainer(t *testing.T) {
	env, a := podmanEnv(t)
	a.KillGrace = time.Second
	in := imageStep(t, imagetest.Busybox(t), "trap '' TERM; echo waiting >&2; sleep 300")
	in.Command.TimeoutSeconds = 2
	_, err := runStep(env, in)
	appErr := appError(t, err)
	assert.Equal(t, CommandTimedOutType, appErr.Type())
	noContainers(t, in.RunID, 5*time.Second)
}

// TestContainerCancelStopsTheContainer: a cancelled step's container is
// gone at once.
func TestContainerCancelStopsTheContainer(t *testing.T) {
	env, a := podmanEnv(t)
	a.KillGrace = time.Second
	ctx, cancel := context.WithCancel(context.Background())
	env.SetWorkerOptions(worker.Options{BackgroundActivityContext: ctx})
	in := imageStep(t, imagetest.Busybox(t), "sleep 300")
	go func() {
		// Waits for the container to run, then cancels the step.
		for len(imagetest.Running(t, "porch-"+in.RunID)) == 0 {
			time.Sleep(100 * time.Millisecond)
		}
		cancel()
	}()
	_, err := runStep(env, in)
	require.Error(t, err)
	noContainers(t, in.RunID, 5*time.Second)
}

// TestDistributedRanksInContainers: instance_count 2 with a pytorch
// distribution runs one container per rank, each with its rank's
// variables, finding the master on loopback.
func TestDistributedRanksInContainers(t *testing.T) {
	env, a := podmanEnv(t)
	in := imageStep(t, imagetest.Busybox(t), `echo "rank=$RANK world=$WORLD_SIZE master=$MASTER_ADDR:$MASTER_PORT host=$(hostname)"`)
	in.Command.Resources.InstanceCount = 2
	in.Command.Distribution = &plan.Distribution{Type: "pytorch"}
	_, err := runStep(env, in)
	require.NoError(t, err)
	logs := filepath.Join(artifactsDir(a, in), "user_logs")
	for r := range 2 {
		log := readFile(t, filepath.Join(logs, fmt.Sprintf("std_log_process_%d.txt", r)))
		assert.Contains(t, log, fmt.Sprintf("rank=%d world=2 master=127.0.0.1:", r))
	}
	main := readFile(t, filepath.Join(logs, "std_log.txt"))
	assert.Contains(t, main, launch.Name(in.RunID, in.StepPath, 1, "rank", "0"))
	assert.Contains(t, main, launch.Name(in.RunID, in.StepPath, 1, "rank", "1"))
	noContainers(t, in.RunID, 5*time.Second)
}

// TestWorkerKilledLeavesNoContainer: a worker killed by SIGKILL in the
// middle of a step leaves no container: the lifeline removes it.
func TestWorkerKilledLeavesNoContainer(t *testing.T) {
	imagetest.RequirePodman(t)
	image := imagetest.Busybox(t)
	run := uniqueRun(t)
	self, err := os.Executable()
	require.NoError(t, err)
	w := exec.Command(self, "-test.run=^$")
	w.Env = append(os.Environ(), containerHelperEnv+"="+image+" "+run)
	out, err := w.StdoutPipe()
	require.NoError(t, err)
	w.Stderr = os.Stderr
	require.NoError(t, w.Start())
	t.Cleanup(func() { _ = w.Process.Kill(); _ = w.Wait() })
	_, err = bufio.NewReader(out).ReadString('\n')
	require.NoError(t, err)
	// Waits for the step's container to run.
	require.Eventually(t, func() bool { return len(imagetest.Running(t, "porch-"+run)) == 1 }, time.Minute, 100*time.Millisecond)
	require.NoError(t, w.Process.Signal(syscall.SIGKILL))
	_ = w.Wait()
	noContainers(t, run, 5*time.Second)
}

// containerHelperEnv makes the test binary a worker running one step's
// process in a container until it is killed: "IMAGE RUN".
const containerHelperEnv = "PORCH_CONTAINER_HELPER"

func TestMain(m *testing.M) {
	if v := os.Getenv(containerHelperEnv); v != "" {
		os.Exit(containerWorker(v))
	}
	os.Exit(m.Run())
}

func containerWorker(v string) int {
	image, run, _ := strings.Cut(v, " ")
	rt, err := launch.Resolve(launch.Podman, launch.LookPath)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	dir, err := os.MkdirTemp("", "porch-helper")
	if err != nil {
		return 1
	}
	defer os.RemoveAll(dir)
	fmt.Println("started")
	spec := procSpec{line: "sleep 300", dir: dir, log: filepath.Join(dir, "log"), rt: rt,
		container: &launch.Container{Name: launch.Name(run, "step", 1), Image: image, Dir: "/"}}
	_, err = runProcess(context.Background(), spec, time.Second)
	fmt.Fprintln(os.Stderr, err)
	return 1
}
