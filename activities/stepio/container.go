package stepio

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/porch-pipelines/porch/activities/condafile"
	"github.com/porch-pipelines/porch/activities/launch"
	"github.com/porch-pipelines/porch/compiler/plan"
)

// ContainerEnv is the environment of a step that runs in a container: its
// own variables, and a managed step's worker credentials (as on the host);
// nothing else of the worker's. The note is Env's.
func (b Bindings) ContainerEnv(in Step) ([]string, string) {
	var creds []string
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); isCredential(k) {
			creds = append(creds, kv)
		}
	}
	env, note := identityEnv(creds, in.Command.Identity, in.SubmittedBy)
	return append(env, b.stepVars(in)...), note
}

// ContainerMounts are what a step's container sees of the host, each at
// its own path so that every path the command, its variables and its
// logs name holds: the working folder and the artifacts folder
// read-write, each output's folder (its staging folder when the attempt
// stages it) read-write, each input on this host read-only, and extra
// (porch's own files the step reads, such as its mlflow module)
// read-only. Nothing else of the worker's home is visible.
func (b Bindings) ContainerMounts(in Step, f Folders, extra ...string) []launch.Mount {
	var mounts []launch.Mount
	seen := map[string]bool{}
	add := func(p string, ro bool) {
		if p == "" || seen[p] {
			return
		}
		if _, err := os.Stat(p); err != nil {
			return
		}
		seen[p] = true
		mounts = append(mounts, launch.Mount{Path: p, ReadOnly: ro})
	}
	add(f.Work, false)
	add(f.Artifacts, false)
	for _, o := range in.Outputs {
		p, ok := b.Output(o.Name)
		if !ok || inside(p, f.Work) || inside(p, f.Artifacts) {
			continue
		}
		if info, err := os.Stat(p); err != nil || !info.IsDir() {
			// A uri_file output: its folder.
			p = filepath.Dir(p)
		}
		add(p, false)
	}
	for _, i := range in.Inputs {
		v, ok := b.inputs[i.Name]
		if !ok || i.Value.Kind != plan.ValueData || !filepath.IsAbs(v) || inside(v, f.Work) {
			continue
		}
		add(v, true)
	}
	for _, p := range extra {
		add(p, true)
	}
	return mounts
}

// inside says whether path p is dir or in it.
func inside(p, dir string) bool {
	if dir == "" {
		return false
	}
	rel, err := filepath.Rel(dir, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../")
}

// runtime is a worker's container runtime and its images, made once.
type runtime struct {
	once   sync.Once
	images *launch.Images
}

// Images are the worker's images, pulled through its Runtime.
func (h *Host) Images() *launch.Images {
	h.rt.once.Do(func() { h.rt.images = &launch.Images{Runtime: h.Runtime} })
	return h.rt.images
}

// EnvironmentKey says what a step's environment runs as on this worker,
// for its reuse key: "image <id>" for an image (pulled now when the
// worker does not have it: the tag is resolved to what the step will
// run), "build <hash of the context>" for a build context, with " conda
// <hash>" for a conda file; "host" on the host runtime. Builds are left to
// the step, whose log shows them: an image built from the same context
// and conda file is the same.
func (h *Host) EnvironmentKey(ctx context.Context, env *plan.Environment) (string, error) {
	key := "host"
	switch {
	case !h.Runtime.Containers():
	case env.Build != nil:
		sum, err := launch.ContextHash(env.Build.Context)
		if err != nil {
			return "", err
		}
		key = "build " + sum + " " + env.Build.Dockerfile
	default:
		img, err := h.Images().Ensure(ctx, env.Image, io.Discard)
		if err != nil {
			return "", err
		}
		key = "image " + img.ID
	}
	if env.Conda != "" {
		key += " conda " + condafile.Hash(env.Conda)
	}
	return key, nil
}

// ErrNoEnvironment is returned by PrepareEnvironment for a step that runs
// on the host.
var ErrNoEnvironment = errors.New("the step runs on the host")

// PrepareEnvironment makes a step's environment ready on this worker and
// returns the image its processes run in: its image pulled when the
// worker does not have it. What it does goes to log. It returns
// ErrNoEnvironment when the step runs on the host: it has no environment,
// or the worker's runtime is the host.
func (h *Host) PrepareEnvironment(ctx context.Context, env *plan.Environment, log io.Writer) (launch.Image, error) {
	if env == nil || !h.Runtime.Containers() {
		return launch.Image{}, ErrNoEnvironment
	}
	var img launch.Image
	var err error
	if env.Build != nil {
		img, err = h.Images().Build(ctx, env.Build.Context, env.Build.Dockerfile, log)
	} else {
		img, err = h.Images().Ensure(ctx, env.Image, log)
	}
	if err == nil && env.Conda != "" {
		img, err = h.condaImage(ctx, img, env, log)
	}
	var pull *launch.PullError
	var build *launch.BuildError
	if errors.As(err, &pull) || errors.As(err, &build) {
		return img, Invalid("%v", err)
	}
	return img, err
}
