package launch

import (
	"errors"
	"os"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func lookIn(found ...string) func(string) (string, error) {
	return func(name string) (string, error) {
		for _, f := range found {
			if f == name {
				return "/usr/bin/" + name, nil
			}
		}
		return "", errors.New("not found")
	}
}

func TestResolve(t *testing.T) {
	for _, c := range []struct {
		want  string
		found []string
		kind  string
	}{
		{"auto", []string{"podman", "docker"}, Podman},
		{"", []string{"docker"}, Docker},
		{"auto", nil, Host},
		{"host", []string{"podman"}, Host},
		{"docker", []string{"podman", "docker"}, Docker},
	} {
		rt, err := Resolve(c.want, lookIn(c.found...))
		require.NoError(t, err)
		assert.Equal(t, c.kind, rt.Kind, "%q with %v", c.want, c.found)
		assert.Equal(t, c.kind != Host, rt.Containers())
	}
	_, err := Resolve("podman", lookIn("docker"))
	assert.ErrorContains(t, err, "--runtime podman: podman is not installed")
	assert.ErrorContains(t, err, "--runtime host")
	_, err = Resolve("kubernetes", lookIn())
	assert.EqualError(t, err, `unknown runtime "kubernetes": choose one of auto, podman, docker, host`)
}

func TestName(t *testing.T) {
	assert.Equal(t, "porch-train-k2x8-sub-train-2", Name("train-k2x8", "sub/train", 2))
	assert.Equal(t, "porch-r-s-1-rank-3", Name("r", "s", 1, "rank", "3"))
}

var testContainer = Container{
	Name: "porch-r-s-1", Image: "0123abcd", Dir: "/w",
	Mounts:  []Mount{{Path: "/w"}, {Path: "/in", ReadOnly: true}},
	Env:     []string{"A=1", "SECRET=hidden"},
	ShmSize: "2g", CPUs: []int{0, 1, 2}, GPUs: []int{1, 3}, Memory: 1 << 30,
}

// TestRunArgsPodman pins the podman command line: values of variables
// never on it, GPUs through CDI.
func TestRunArgsPodman(t *testing.T) {
	r := Runtime{Kind: Podman, Bin: "/usr/bin/podman"}
	assert.Equal(t, []string{"run", "--name", "porch-r-s-1", "--init", "--network", "host", "--pull", "never", "--entrypoint", "",
		"--rm", "--replace", "--workdir", "/w", "--volume", "/w:/w:rw", "--volume", "/in:/in:ro", "--env", "A", "--env", "SECRET",
		"--shm-size", "2g", "--cpuset-cpus", "0,1,2", "--memory", "1073741824",
		"--device", "nvidia.com/gpu=1", "--device", "nvidia.com/gpu=3", "0123abcd", "/bin/sh", "-c", "x"},
		r.RunArgs(testContainer, []string{"/bin/sh", "-c", "x"}))
	assert.Equal(t, []string{"/usr/bin/podman", "rm", "--force", "--ignore", "--time", "0", "porch-r-s-1"}, r.Cleanup("porch-r-s-1"))
	assert.Equal(t, []string{"exec", "--interactive", "--workdir", "/w", "--env", "A", "c", "python3"}, r.ExecArgs("c", "/w", []string{"A=1"}, []string{"python3"}))
}

// TestRunArgsDocker pins the docker command line, which cannot run here
// (the machine has docker's client, no engine): --gpus, no --replace, the
// worker's user when it is not root.
func TestRunArgsDocker(t *testing.T) {
	r := Runtime{Kind: Docker, Bin: "/usr/bin/docker"}
	c := testContainer
	c.Keep = true
	want := []string{"run", "--name", "porch-r-s-1", "--init", "--network", "host", "--pull", "never", "--entrypoint", "",
		"--detach", "--workdir", "/w", "--volume", "/w:/w:rw", "--volume", "/in:/in:ro", "--env", "A", "--env", "SECRET",
		"--shm-size", "2g", "--cpuset-cpus", "0,1,2", "--memory", "1073741824", "--gpus", `"device=1,3"`}
	if os.Getuid() != 0 {
		want = append(want, "--user", strconv.Itoa(os.Getuid())+":"+strconv.Itoa(os.Getgid()))
	}
	want = append(want, "0123abcd", "sleep")
	assert.Equal(t, want, r.RunArgs(c, []string{"sleep"}))
	assert.Equal(t, []string{"/usr/bin/docker", "rm", "--force", "porch-r-s-1"}, r.Cleanup("porch-r-s-1"))
	assert.Equal(t, []string{"stop", "--time", "5", "c"}, r.StopArgs("c", 5))
}

func TestClientEnvCarriesTheValues(t *testing.T) {
	env := clientEnv([]string{"SECRET=hidden"})
	assert.Equal(t, "SECRET=hidden", env[len(env)-1])
}
