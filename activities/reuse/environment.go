package reuse

import (
	"context"
	"errors"
	"io"
	"strings"

	"github.com/porch-pipelines/porch/activities/condafile"
	"github.com/porch-pipelines/porch/activities/stepio"
	"github.com/porch-pipelines/porch/compiler/plan"
)

// environmentPart replaces the environment part of a step's key, the
// environment as written, by what the step runs in on this worker: the
// id (digest) of the image its environment resolves to, a conda file's
// derived image included, so that a tag moved to another image runs the
// step again and the same image written two ways does not; on the host
// runtime, the conda file's hash. An image this worker cannot prepare
// keeps the part as written: the step itself then fails, saying why.
func (a *Activities) environmentPart(ctx context.Context, s plan.Step, parts []Part) []Part {
	env, vars := stepEnvironment(s)
	if env == nil {
		return parts
	}
	ran := "host"
	if env.Conda != "" {
		ran += " conda " + condafile.Hash(env.Conda)
	}
	img, err := a.Host.PrepareEnvironment(ctx, env, io.Discard)
	switch {
	case err == nil:
		ran = "image " + img.ID
	case !errors.Is(err, stepio.ErrNoEnvironment):
		return parts
	}
	for i := range parts {
		if parts[i].Name == PartEnvironment {
			parts[i].Hash = hashOf(environment(ran, vars))
			parts[i].Detail = strings.TrimPrefix(ran, "image ")
		}
	}
	return parts
}

// stepEnvironment is the environment a command step runs in, and its
// variables.
func stepEnvironment(s plan.Step) (*plan.Environment, map[string]string) {
	if s.Command == nil {
		return nil, nil
	}
	return s.Command.Env, s.Command.EnvironmentVariables
}
