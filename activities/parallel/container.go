package parallel

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/porch-pipelines/porch/activities/entryscript"
	"github.com/porch-pipelines/porch/activities/launch"
	"github.com/porch-pipelines/porch/activities/metrics"
	"github.com/porch-pipelines/porch/activities/stepio"
)

// instance is the long-lived container this node's entry-script
// processes run in, for the life of the step's runtime here: started
// once, not once per mini-batch, and removed when the runtime shuts down
// (its lifeline removes it if the worker dies first).
type instance struct {
	grp  *launch.Group
	name string
	// pid is the container's init as the host sees it, whose pid
	// namespace holds the entry-script processes.
	pid int
}

// environment prepares the step's environment on this node: its image,
// nil when the entry scripts run on the host (no environment, or the host
// runtime, which the step's porch log then says).
func (a *Activities) environment(ctx context.Context, rt *parallelRuntime) (*launch.Image, error) {
	env := rt.spec.Input.Parallel.Task.Env
	var log bytes.Buffer
	img, err := a.PrepareEnvironment(ctx, env, &log)
	for _, l := range strings.Split(strings.TrimSpace(log.String()), "\n") {
		if l != "" {
			rt.log(l)
		}
	}
	switch {
	case errors.Is(err, stepio.ErrNoEnvironment):
		if env != nil {
			rt.log(fmt.Sprintf("porch: node %s runs steps on its host (--runtime host): environment %s is not applied; entry scripts run with what is installed on this host", rt.node, env.Describe()))
		}
		return nil, nil
	case err != nil:
		rt.log("porch: " + err.Error())
		return nil, err
	}
	return &img, nil
}

// startInstance starts the node's container of img: it sees the step's
// working folder, artifacts and logs, its inputs and outputs, the driver
// and porch's mlflow module, and holds its variables.
func (a *Activities) startInstance(ctx context.Context, rt *parallelRuntime, img launch.Image, mounts []launch.Mount,
	env []string, cpus, gpus []int) (*instance, error) {
	driver, err := entryscript.DriverPath("")
	if err != nil {
		return nil, err
	}
	shim, _ := metrics.ShimDir("")
	for _, p := range []string{filepath.Dir(driver), shim} {
		if p != "" {
			mounts = append(mounts, launch.Mount{Path: p, ReadOnly: true})
		}
	}
	for _, p := range []string{rt.folders.logs, rt.folders.state} {
		mounts = append(mounts, launch.Mount{Path: p})
	}
	name := launch.Name(rt.ref.RunID, rt.ref.StepPath, 1, rt.node)
	grp, err := a.Runtime.NewGroup(name)
	if err != nil {
		return nil, err
	}
	c := launch.Container{Name: name, Image: img.ID, Mounts: dedupe(mounts), Env: env, Dir: rt.work, Keep: true,
		CPUs: cpus, GPUs: gpus, ShmSize: rt.spec.Input.Parallel.Resources.ShmSize}
	// The container's own process only keeps it running.
	cmd := grp.Run(c, []string{"/bin/sh", "-c", "trap 'exit 0' TERM; while :; do sleep 3600 & wait $!; done"})
	out, err := cmd.CombinedOutput()
	if err != nil {
		grp.Remove()
		grp.Release()
		return nil, stepio.Invalid("step %q: cannot start the entry scripts' container of image %s with %s: %s",
			rt.ref.StepPath, img.Ref, a.Runtime.Kind, strings.TrimSpace(string(out)))
	}
	pid, err := a.Runtime.InitPID(ctx, name)
	if err != nil {
		rt.log(fmt.Sprintf("porch: node %s: the resource monitor cannot find the container's processes: %v", rt.node, err))
	}
	rt.log(fmt.Sprintf("porch: node %s runs the entry scripts in image %s (id %.12s) with %s, container %s", rt.node, img.Ref, img.ID, a.Runtime.Kind, name))
	return &instance{grp: grp, name: name, pid: pid}, nil
}

// stop removes the container.
func (in *instance) stop() {
	if in == nil {
		return
	}
	in.grp.Remove()
	in.grp.Release()
}

// pids are the container's processes as the host sees them.
func (in *instance) pids() []int {
	if in == nil || in.pid == 0 {
		return nil
	}
	return launch.NamespacePIDs(in.pid)
}

// visibleGPUs are the GPUs CUDA_VISIBLE_DEVICES names in env: the ones
// the node's instance holds, which its container gets.
func visibleGPUs(env []string) []int {
	var ids []int
	for _, kv := range env {
		v, ok := strings.CutPrefix(kv, "CUDA_VISIBLE_DEVICES=")
		if !ok {
			continue
		}
		for _, f := range strings.Split(v, ",") {
			if id, err := strconv.Atoi(strings.TrimSpace(f)); err == nil {
				ids = append(ids, id)
			}
		}
	}
	return ids
}

func dedupe(mounts []launch.Mount) []launch.Mount {
	seen := map[string]bool{}
	return slices.DeleteFunc(mounts, func(m launch.Mount) bool {
		if m.Path == "" || seen[m.Path] {
			return true
		}
		seen[m.Path] = true
		return false
	})
}
