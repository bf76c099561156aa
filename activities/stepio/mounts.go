package stepio

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/porch-pipelines/porch/activities/objectstore"
	"github.com/porch-pipelines/porch/activities/objectstore/lazyfs"
	"github.com/porch-pipelines/porch/compiler/plan"
)

// How a step reads a data input on object storage.
const (
	// ReadMount mounts the data read-only (FUSE): bytes are fetched as the
	// command reads them. ro_mount, Azure's default, and eval_mount.
	ReadMount = "ro_mount"
	// ReadDownload copies the data into the working folder before the
	// command starts. download and eval_download.
	ReadDownload = "download"
	// ReadDirect passes the data's URI (s3://bucket/key) to the command,
	// which reads it itself.
	ReadDirect = "direct"
)

// InputMode is how the step reads a data input: its binding's mode, else
// the data's own mode when that is an input mode (a producing step's output
// mode, upload or rw_mount, is not), else ro_mount.
func InputMode(step string, inp plan.Input) (string, error) {
	mode := inp.Mode
	if mode == "" && inp.Value.Data != nil {
		if m := inp.Value.Data.Mode; m != "upload" && m != "rw_mount" {
			mode = m
		}
	}
	switch mode {
	case "", "ro_mount", "mount", "eval_mount":
		return ReadMount, nil
	case "download", "eval_download":
		return ReadDownload, nil
	case "direct":
		return ReadDirect, nil
	}
	return "", Invalid("step %q: input %q has mode %q, which is no input mode: use ro_mount (the default), download or direct", step, inp.Name, mode)
}

// mountSet is the FUSE mounts of one step's inputs.
type mountSet struct {
	mounted []*lazyfs.Mounted
	// unavailable is why this worker cannot mount, once a mount failed:
	// later inputs are downloaded without trying again.
	unavailable error
	// Notes are lines for the step's log: what was mounted, and the
	// fallback to downloads, said once.
	Notes []string
}

var (
	// errNoMount means the input must be downloaded: this worker cannot
	// mount.
	errNoMount = errors.New("cannot mount")
	// errMountsOff is why a worker with DisableMounts does not mount.
	errMountsOff = errors.New("mounts are turned off for this worker")
)

// s3Input says whether inp is data on a registered s3 datastore, which one,
// and the path inside it.
func (h *Host) storedInput(inp plan.Input) (plan.Datastore, string, bool) {
	if inp.Value.Kind != plan.ValueData || inp.Value.Data == nil {
		return plan.Datastore{}, "", false
	}
	return h.ObjectLocation(inp.Value.Data.Path)
}

// objectInput makes a data input on object storage readable by the
// command in the working folder work, as its mode says, and returns what
// the command sees: a mounted or downloaded local path, or the URI.
func (h *Host) objectInput(ctx context.Context, step string, inp plan.Input, d plan.Datastore, p, work string, ms *mountSet) (string, error) {
	mode, err := InputMode(step, inp)
	if err != nil {
		return "", err
	}
	switch mode {
	case ReadDirect:
		if !strings.HasPrefix(inp.Value.Data.Path, DatastorePrefix) {
			// A URI the pipeline wrote is passed as written, as Azure ML
			// passes a direct input's URI.
			return inp.Value.Data.Path, nil
		}
		return h.directURI(step, inp, d, p)
	case ReadMount:
		local, err := h.mountInput(ctx, step, inp, d, p, work, ms)
		if !errors.Is(err, errNoMount) {
			return local, err
		}
	}
	return h.downloadInput(ctx, step, inp, d, p, work)
}

// directURI is the storage's URI of the data, which a direct input renders
// as (Azure ML passes a direct input's storage URI for the job to read):
// s3://<bucket>/<key>, or https://<account>.blob.<endpoint>/<container>/<path>.
func (h *Host) directURI(step string, inp plan.Input, d plan.Datastore, p string) (string, error) {
	s, err := h.ObjectStore(d)
	if err != nil {
		return "", StoreError(fmt.Sprintf("step %q: input %q: open %s", step, inp.Name, describe(d)), err)
	}
	u, err := s.URI(p)
	if err != nil {
		return "", Invalid("step %q: input %q: %v", step, inp.Name, err)
	}
	return u, nil
}

// mountInput mounts the data read-only at .porch-inputs/<input> in the
// working folder and returns the path the command reads. errNoMount means
// this worker cannot mount; the first such failure is noted in ms.
func (h *Host) mountInput(ctx context.Context, step string, inp plan.Input, d plan.Datastore, p, work string, ms *mountSet) (string, error) {
	if ms.unavailable != nil {
		return "", errNoMount
	}
	s, err := h.ObjectStore(d)
	if err != nil {
		return "", StoreError(fmt.Sprintf("step %q: input %q: open %s", step, inp.Name, describe(d)), err)
	}
	var mounted *lazyfs.Mounted
	err = errMountsOff
	if !h.DisableMounts {
		mounted, err = lazyfs.Mount(ctx, s, p, filepath.Join(work, ".porch-inputs", inp.Name), lazyfs.Options{})
	}
	var serr *objectstore.Error
	switch {
	case errors.As(err, &serr):
		return "", StoreError(fmt.Sprintf("step %q: mount input %q", step, inp.Name), err)
	case err != nil:
		ms.unavailable = err
		ms.Notes = append(ms.Notes, fmt.Sprintf("porch: FUSE mounts are not available on this worker (%v): ro_mount inputs on object storage are downloaded into the working folder instead", err))
		return "", errNoMount
	}
	ms.mounted = append(ms.mounted, mounted)
	ms.Notes = append(ms.Notes, fmt.Sprintf("porch: input %q: %q on %s is mounted read-only at %s; files are fetched as they are read", inp.Name, p, describe(d), mounted.Path))
	return mounted.Path, nil
}

// Unmount unmounts the step's inputs and returns what went wrong, as lines
// for the step's log. A mount a process still holds open is detached
// lazily, so the folder is free either way.
func (ms *mountSet) Unmount() []string {
	var problems []string
	for i := len(ms.mounted) - 1; i >= 0; i-- {
		if err := ms.mounted[i].Unmount(); err != nil {
			problems = append(problems, "porch: "+err.Error())
		}
	}
	ms.mounted = nil
	return problems
}
