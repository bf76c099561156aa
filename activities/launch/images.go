package launch

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"sync"

	"github.com/porch-pipelines/porch/activities/lifeline"
)

// Image is an image a worker has: the reference a step names, and the
// id the runtime stores it under (the digest of its configuration), which
// containers run and reuse keys name.
type Image struct {
	Ref string `json:"ref"`
	ID  string `json:"id"`
}

// PullError is an image the runtime could not pull: the step cannot run
// here, and trying again on this worker would not help.
type PullError struct {
	Runtime Runtime
	Ref     string
	// Output is the end of what the runtime said.
	Output string
}

func (e *PullError) Error() string {
	return fmt.Sprintf("cannot pull image %q with %s: %s; pull it where the worker can reach it (%s pull, or load it from a file), or run the worker with --runtime host to run steps on its host without their environment",
		e.Ref, e.Runtime.Kind, e.Output, e.Runtime.Kind)
}

// Images pulls and inspects images for one worker, each once at a time.
type Images struct {
	Runtime Runtime
	mu      sync.Mutex
	pulling map[string]*sync.Mutex
	// modules caches HasModule's answers by image id and module.
	modules map[string]bool
}

// Ensure returns the image ref names, pulling it first when the runtime
// does not have it; the pull's progress goes to log. A ref the runtime has
// is used as it is: a worker pulls an image once, as an Azure ML node
// does, and `podman pull` refreshes it. The pull runs in a group that dies
// with the worker (lifeline.Run), and stops when ctx ends.
func (im *Images) Ensure(ctx context.Context, ref string, log io.Writer) (Image, error) {
	lock := im.lock(ref)
	lock.Lock()
	defer lock.Unlock()
	if id, err := im.Inspect(ctx, ref); err == nil {
		fmt.Fprintf(log, "porch: image %s is on this worker (id %.12s)\n", ref, id)
		return Image{Ref: ref, ID: id}, nil
	}
	fmt.Fprintf(log, "porch: pulling image %s with %s\n", ref, im.Runtime.Kind)
	var out bytes.Buffer
	cmd := exec.Command(im.Runtime.Bin, "pull", ref)
	cmd.Stdout, cmd.Stderr = io.MultiWriter(log, &out), io.MultiWriter(log, &out)
	if err := lifeline.Run(ctx, cmd, clientGrace); err != nil {
		if ctx.Err() != nil {
			return Image{}, ctx.Err()
		}
		return Image{}, &PullError{Runtime: im.Runtime, Ref: ref, Output: pullError(out.String(), err)}
	}
	id, err := im.Inspect(ctx, ref)
	if err != nil {
		return Image{}, fmt.Errorf("inspect image %q after pulling it: %w", ref, err)
	}
	return Image{Ref: ref, ID: id}, nil
}

// Inspect returns the id of an image the runtime has; an error when it has
// none.
func (im *Images) Inspect(ctx context.Context, ref string) (string, error) {
	cmd := exec.CommandContext(ctx, im.Runtime.Bin, "image", "inspect", "--format", "{{.Id}}", ref)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("%s image inspect %s: %s", im.Runtime.Kind, ref, lastLines(stderr.String(), 2, err))
	}
	id := strings.TrimSpace(string(out))
	if i := strings.IndexByte(id, '\n'); i >= 0 {
		id = id[:i]
	}
	if id == "" {
		return "", errors.New("no image id")
	}
	return strings.TrimPrefix(id, "sha256:"), nil
}

func (im *Images) lock(ref string) *sync.Mutex {
	im.mu.Lock()
	defer im.mu.Unlock()
	if im.pulling == nil {
		im.pulling = map[string]*sync.Mutex{}
	}
	l, ok := im.pulling[ref]
	if !ok {
		l = &sync.Mutex{}
		im.pulling[ref] = l
	}
	return l
}

// pullError is what the runtime said of a failed pull: its last "Error:"
// line (podman and docker print warnings of each retry before it), else
// its last lines.
func pullError(out string, err error) string {
	lines := strings.Split(strings.TrimSpace(out), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if l := strings.TrimSpace(lines[i]); strings.HasPrefix(l, "Error") {
			return l
		}
	}
	return lastLines(out, 2, err)
}

// lastLines is the last n non-empty lines of out, or err when there are
// none.
func lastLines(out string, n int, err error) string {
	var lines []string
	for _, l := range strings.Split(out, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, l)
		}
	}
	if len(lines) == 0 {
		return err.Error()
	}
	return strings.Join(lines[max(0, len(lines)-n):], "; ")
}

// HasModule says whether the image's python3 (else python) finds a Python
// module, without importing it; asked once per image and module for the
// life of the worker. An image without Python has none.
func (im *Images) HasModule(ctx context.Context, img Image, module string) bool {
	key := img.ID + "\x00" + module
	im.mu.Lock()
	if has, ok := im.modules[key]; ok {
		im.mu.Unlock()
		return has
	}
	im.mu.Unlock()
	script := `import importlib.util, sys
sys.path[:] = [p for p in sys.path if p not in ("", ".")]
sys.exit(0 if importlib.util.find_spec(sys.argv[1]) else 3)`
	probe := `py=$(command -v python3 || command -v python) || exit 3; exec "$py" -c "$0" "$1"`
	args := []string{"run", "--rm", "--network", "none", "--pull", "never", "--entrypoint", "", img.ID, "/bin/sh", "-c", probe, script, module}
	has := exec.CommandContext(ctx, im.Runtime.Bin, args...).Run() == nil
	if ctx.Err() != nil {
		return has
	}
	im.mu.Lock()
	if im.modules == nil {
		im.modules = map[string]bool{}
	}
	im.modules[key] = has
	im.mu.Unlock()
	return has
}
