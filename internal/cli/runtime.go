package cli

import (
	"github.com/spf13/pflag"

	"github.com/porch-pipelines/porch/activities/launch"
)

// envRuntime names the runtime when no --runtime is given; porch dev's
// fleet passes its own to its workers through it.
const envRuntime = "PORCH_RUNTIME"

// registerRuntime adds --runtime to the flags of a command that runs steps.
func registerRuntime(fs *pflag.FlagSet, p *string) {
	fs.StringVar(p, "runtime", "", "where steps with an environment: run: auto (podman, else docker, when installed, else the host), "+
		"podman, docker or host (steps run on this machine with what is installed, their environments not applied); "+
		"default $"+envRuntime+", else runtime: in $PORCH_HOME/config.yaml, else auto")
}

// resolveRuntime applies --runtime, then $PORCH_RUNTIME, then config.yaml's
// runtime:, then auto.
func (a *app) resolveRuntime(flag, home string) (launch.Runtime, error) {
	want := flag
	if want == "" {
		want = a.getenv(envRuntime)
	}
	if want == "" && home != "" {
		cfg, err := readConfig(home + "/config.yaml")
		if err != nil {
			return launch.Runtime{}, err
		}
		want = cfg.Runtime
	}
	return launch.Resolve(want, launch.LookPath)
}

// runtimeWhere says where steps with an environment run on rt.
func runtimeWhere(rt launch.Runtime) string {
	if rt.Containers() {
		return "in containers of their images"
	}
	return "on this host, their environments not applied"
}
