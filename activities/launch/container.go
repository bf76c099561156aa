package launch

import (
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/porch-pipelines/porch/activities/affinity"
)

// Container is where a step's process runs when its environment is an
// image: what the container is called, what it sees and what it may use.
type Container struct {
	// Name is the container's name (Name gives one after the run, step
	// and attempt).
	Name string
	// Image is the image to run: an image id, so that a tag moved since
	// the step pulled it changes nothing.
	Image string
	// Mounts are the host paths the container sees, each at the same
	// path: the step's working folder, its artifacts, inputs, outputs.
	Mounts []Mount
	// Env names the variables the container gets, KEY=VALUE. Their values
	// reach the runtime's client through its environment, never its
	// command line, where other users of the host could read them.
	Env []string
	// Dir is the working folder inside the container.
	Dir string
	// ShmSize is resources.shm_size ("2g"), "" for the runtime's default.
	ShmSize string
	// CPUs are the host cores the container may run on; none means any.
	CPUs []int
	// GPUs are the host GPUs (nvidia-smi's numbers) the container gets.
	GPUs []int
	// Memory is a memory limit in bytes, 0 for none.
	Memory int64
	// Keep leaves the container in place when its process exits (a
	// parallel step's instance, whose entry scripts run with Exec);
	// otherwise it is removed.
	Keep bool
}

// Mount is a host path bound into a container at the same path.
type Mount struct {
	Path     string
	ReadOnly bool
}

// nameRE is what a container name may hold.
var nameRE = regexp.MustCompile(`[^a-zA-Z0-9_.-]+`)

// Name names a container after what it runs: porch-<run>-<step>-<attempt>
// and any further parts (a rank, an instance), each made safe for the
// runtime (a step path's "/" becomes "-").
func Name(run, step string, attempt int32, more ...string) string {
	parts := append([]string{"porch", run, step, strconv.Itoa(int(attempt))}, more...)
	for i, p := range parts {
		parts[i] = strings.Trim(nameRE.ReplaceAllString(p, "-"), "-")
	}
	return strings.Join(parts, "-")
}

// RunArgs are the client's arguments that run argv in c, attached: its
// output is the client's, and the signals the client gets go to the
// container's init, which passes them on.
func (r Runtime) RunArgs(c Container, argv []string) []string {
	// The image's entrypoint is not run: the step's command line is what
	// runs, as in Azure ML.
	args := []string{"run", "--name", c.Name, "--init", "--network", "host", "--pull", "never", "--entrypoint", ""}
	if !c.Keep {
		args = append(args, "--rm")
	}
	if r.Kind == Podman {
		// A container of the same name that a dead worker's lifeline could
		// not remove is replaced; docker has no such flag (see Prepare).
		args = append(args, "--replace")
	}
	if c.Keep {
		args = append(args, "--detach")
	}
	if c.Dir != "" {
		args = append(args, "--workdir", c.Dir)
	}
	for _, m := range c.Mounts {
		opt := "rw"
		if m.ReadOnly {
			opt = "ro"
		}
		args = append(args, "--volume", m.Path+":"+m.Path+":"+opt)
	}
	for _, kv := range c.Env {
		k, _, _ := strings.Cut(kv, "=")
		args = append(args, "--env", k)
	}
	if c.ShmSize != "" {
		args = append(args, "--shm-size", c.ShmSize)
	}
	if len(c.CPUs) > 0 {
		args = append(args, "--cpuset-cpus", affinity.Format(c.CPUs))
	}
	if c.Memory > 0 {
		args = append(args, "--memory", strconv.FormatInt(c.Memory, 10))
	}
	args = append(args, r.gpuArgs(c.GPUs)...)
	if r.Kind == Docker && os.Getuid() != 0 {
		// Docker's containers run as root on the host: files the step
		// writes must belong to the worker. Rootless podman maps root to
		// the worker's user by itself.
		args = append(args, "--user", strconv.Itoa(os.Getuid())+":"+strconv.Itoa(os.Getgid()))
	}
	args = append(args, c.Image)
	return append(args, argv...)
}

// gpuArgs hand the container the host's GPUs ids: through CDI with
// podman (nvidia-ctk cdi generate names them nvidia.com/gpu=N), through
// docker's --gpus with docker.
func (r Runtime) gpuArgs(ids []int) []string {
	if len(ids) == 0 {
		return nil
	}
	if r.Kind == Docker {
		strs := make([]string, len(ids))
		for i, id := range ids {
			strs[i] = strconv.Itoa(id)
		}
		return []string{"--gpus", `"device=` + strings.Join(strs, ",") + `"`}
	}
	var args []string
	for _, id := range ids {
		args = append(args, "--device", "nvidia.com/gpu="+strconv.Itoa(id))
	}
	return args
}

// ExecArgs are the client's arguments that run argv in the running
// container name, with the variables env names (see Container.Env).
func (r Runtime) ExecArgs(name, dir string, env []string, argv []string) []string {
	args := []string{"exec", "--interactive"}
	if dir != "" {
		args = append(args, "--workdir", dir)
	}
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		args = append(args, "--env", k)
	}
	args = append(args, name)
	return append(args, argv...)
}

// RemoveArgs are the client's arguments that remove container name at
// once, running or not, and succeed when there is none.
func (r Runtime) RemoveArgs(name string) []string {
	if r.Kind == Docker {
		// docker rm -f succeeds for a missing container.
		return []string{"rm", "--force", name}
	}
	return []string{"rm", "--force", "--ignore", "--time", "0", name}
}

// StopArgs are the client's arguments that stop container name: its init
// gets SIGTERM and the container SIGKILL after grace seconds.
func (r Runtime) StopArgs(name string, graceSeconds int) []string {
	return []string{"stop", "--time", strconv.Itoa(graceSeconds), name}
}

// Cleanup is the command (argv) a lifeline runs when the worker dies: the
// container's removal.
func (r Runtime) Cleanup(name string) []string {
	return slices.Concat([]string{r.Bin}, r.RemoveArgs(name))
}

// clientEnv is the runtime client's environment: the worker's (the
// client's own settings, CONTAINERS_CONF, DOCKER_HOST, registry
// credentials), then the variables passed to the container by name.
func clientEnv(vars []string) []string {
	return append(os.Environ(), vars...)
}
