package reuse

import (
	"context"

	"github.com/porch-pipelines/porch/compiler/plan"
)

// environmentPart replaces the environment part of a step's key, the
// environment as written, by what the step runs in on this worker (see
// stepio.Host.EnvironmentKey): the id (digest) of its image, so that a tag
// moved to another image runs the step again, with its conda file's hash.
// An image this worker cannot pull keeps the part as written: the step
// itself then fails, saying why.
func (a *Activities) environmentPart(ctx context.Context, s plan.Step, parts []Part) []Part {
	env, vars := stepEnvironment(s)
	if env == nil {
		return parts
	}
	ran, err := a.Host.EnvironmentKey(ctx, env)
	if err != nil {
		return parts
	}
	for i := range parts {
		if parts[i].Name == PartEnvironment {
			parts[i].Hash = hashOf(environment(ran, vars))
			parts[i].Detail = ran
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
