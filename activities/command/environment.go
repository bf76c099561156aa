package command

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/porch-pipelines/porch/activities/launch"
	"github.com/porch-pipelines/porch/activities/metrics"
	"github.com/porch-pipelines/porch/activities/stepio"
)

// environment makes the step's environment ready: it returns the image
// its processes run in, nil when they run on the host, and a note for the
// step's log, job show and its summary when the step declares an
// environment the worker does not apply. A pull that fails fails the step
// for good, with the runtime's error in its log.
func (a *Activities) environment(ctx context.Context, r *stepRun) (*launch.Image, string, error) {
	env := r.in.Command.Env
	if env == nil {
		if d := r.in.Command.Environment; d != "" {
			// A plan recorded before porch ran environments.
			return nil, fmt.Sprintf("porch: the plan was compiled before porch ran environments: %q is not set up; the step runs on this worker's host with what is installed there", d), nil
		}
		return nil, "", nil
	}
	logf, err := os.OpenFile(r.mainLog(), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, "", fmt.Errorf("open step log: %w", err)
	}
	defer logf.Close()
	stop := a.BeatWhile(ctx, func() any { return stepio.Beat{Phase: "preparing environment"} })
	defer stop()
	if !a.Runtime.Containers() {
		note := fmt.Sprintf("porch: this worker runs steps on its host (--runtime host): environment %s is not applied; the step runs with what is installed on this host", env.Describe())
		if env.Conda == "" {
			return nil, note, nil
		}
		py, err := a.HostEnvironment(ctx, env, logf)
		if err != nil {
			fmt.Fprintf(logf, "porch: %v\n", err)
			return nil, "", err
		}
		r.python = py
		return nil, fmt.Sprintf("porch: this worker runs steps on its host (--runtime host): the image of environment %s is not applied; its conda file is, in %s", env.Describe(), filepath.Dir(py.Bin)), nil
	}
	img, err := a.PrepareEnvironment(ctx, env, logf)
	if errors.Is(err, stepio.ErrNoEnvironment) {
		return nil, "", nil
	}
	if err != nil {
		fmt.Fprintf(logf, "porch: %v\n", err)
		return nil, "", err
	}
	return &img, "", nil
}

// containerEnv is the environment of the step's processes in its image:
// the step's variables and the metrics file, and porch's mlflow module
// when the image has no mlflow of its own.
func (a *Activities) containerEnv(ctx context.Context, r stepRun, env, notes []string) ([]string, []string) {
	file := r.folders.Artifacts + "/" + metrics.FileName
	has := a.Images().HasModule(ctx, *r.image, "mlflow")
	out, err := metrics.ExtendProbed(env, has, file, "")
	switch {
	case err != nil:
		notes = append(notes, fmt.Sprintf("porch: porch's mlflow module is not available to the step (%v): scripts that import mlflow fail unless the image has mlflow", err))
	case !has:
		notes = append(notes, "porch: the image has no mlflow: porch's mlflow module is on PYTHONPATH and records what the script logs in "+file)
	}
	return out, notes
}

// container is the container process i of the step runs in.
func (r stepRun) container(rank int, ranked bool, env []string, mounts []launch.Mount) *launch.Container {
	var more []string
	if ranked {
		more = append(more, "rank", strconv.Itoa(rank))
	}
	return &launch.Container{
		Name:    launch.Name(r.in.RunID, r.in.StepPath, r.attempt, more...),
		Image:   r.image.ID,
		Mounts:  mounts,
		Env:     slices.Clone(env),
		Dir:     r.folders.Work,
		ShmSize: r.in.Command.Resources.ShmSize,
	}
}

// containerNote says where the step runs, for its log.
func (r stepRun) containerNote(rt launch.Runtime, specs []procSpec) string {
	names := make([]string, 0, len(specs))
	for _, s := range specs {
		names = append(names, s.container.Name)
	}
	return fmt.Sprintf("porch: the step runs in image %s (id %s) with %s, container %s; it sees its working folder, artifacts, inputs and outputs, nothing else of this worker",
		r.image.Ref, shortID(r.image.ID), rt.Kind, strings.Join(names, ", "))
}

func shortID(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}
