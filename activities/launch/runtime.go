// Package launch is the one place every process of a step starts: a
// command, a rank of a distributed step, an entry-script process, a sweep
// trial. It knows where the step's environment says the process runs (on
// the worker's host, or in a container through podman or docker), how to
// stop it and how to kill it with its worker (its lifeline), and what it
// may see: on the host, what the worker sees; in a container, only the
// step's own folders, bound at the same paths, and the step's variables.
//
// Docker is driven through its command-line client exactly as podman is;
// the two differ only in the flags this package writes (GPUs, init,
// replacing a stale container).
package launch

import (
	"fmt"
	"os/exec"
	"strings"
)

// Runtime names.
const (
	Auto   = "auto"
	Host   = "host"
	Podman = "podman"
	Docker = "docker"
)

// Names are the runtimes --runtime takes.
var Names = []string{Auto, Podman, Docker, Host}

// Runtime is how a worker runs its steps' processes. The zero Runtime is
// the host.
type Runtime struct {
	// Kind is Host, Podman or Docker.
	Kind string
	// Bin is the runtime's command-line client, "" on the host.
	Bin string
}

// Resolve turns --runtime into a Runtime: auto is podman, else docker,
// when its client is on PATH (lookPath is exec.LookPath), else the host;
// podman and docker must be found.
func Resolve(want string, lookPath func(string) (string, error)) (Runtime, error) {
	switch want {
	case Host:
		return Runtime{Kind: Host}, nil
	case Podman, Docker:
		bin, err := lookPath(want)
		if err != nil {
			return Runtime{}, fmt.Errorf("--runtime %s: %s is not installed (%v): install it, or choose --runtime host to run steps on this machine as it is", want, want, err)
		}
		return Runtime{Kind: want, Bin: bin}, nil
	case "", Auto:
		for _, k := range []string{Podman, Docker} {
			if bin, err := lookPath(k); err == nil {
				return Runtime{Kind: k, Bin: bin}, nil
			}
		}
		return Runtime{Kind: Host}, nil
	}
	return Runtime{}, fmt.Errorf("unknown runtime %q: choose one of %s", want, strings.Join(Names, ", "))
}

// LookPath is exec.LookPath, for Resolve.
func LookPath(name string) (string, error) { return exec.LookPath(name) }

// Containers says whether steps with an environment run in containers.
func (r Runtime) Containers() bool { return r.Kind == Podman || r.Kind == Docker }

// String names the runtime for logs.
func (r Runtime) String() string {
	if r.Kind == "" {
		return Host
	}
	return r.Kind
}

// command is an exec.Cmd of the runtime's client.
func (r Runtime) command(args ...string) *exec.Cmd {
	return exec.Command(r.Bin, args...)
}
