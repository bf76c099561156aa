package codesnapshot

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"github.com/porch-pipelines/porch/activities/objectstore"
	"github.com/porch-pipelines/porch/compiler/plan"
)

// Result is one code folder or file of a plan and its snapshot.
type Result struct {
	// Source is the local path the plan named.
	Source string
	// URI is the snapshot, which the plan now names.
	URI   string
	Files int
	// Uploaded is false when the snapshot was already on the datastore.
	Uploaded bool
}

// codeRef is a plan field that names code, and the step it belongs to.
type codeRef struct {
	code *string
	step plan.Step
}

// SnapshotPlan snapshots every distinct code folder or file the plan's
// steps name (commands, parallel steps' tasks, sweep trials, nested
// pipelines) onto the datastore d, a registered local or object datastore
// (s3, azure_blob, azure_data_lake_gen2), and
// makes the plan name the snapshots instead. The folder skip (the porch
// home) is left out of every tree. Code already named by a URI is left
// alone, so a plan can be snapshotted twice.
func SnapshotPlan(ctx context.Context, p *plan.Plan, d plan.Datastore, skip string) ([]Result, error) {
	var put func(*Tree) (bool, error)
	switch {
	case d.ObjectStore():
		s, err := objectstore.Open(d)
		if err != nil {
			return nil, err
		}
		put = func(t *Tree) (bool, error) { return UploadObjects(ctx, s, t) }
	case d.Type == plan.DatastoreLocal:
		put = func(t *Tree) (bool, error) {
			if err := localRoot(d); err != nil {
				return false, err
			}
			return CopyLocal(t, d.Path)
		}
	default:
		return nil, fmt.Errorf("datastore %q has type %q: code snapshots go to local, s3, azure_blob or azure_data_lake_gen2 datastores", d.Name, d.Type)
	}
	var refs []codeRef
	collect(&p.Pipeline, &refs)
	var out []Result
	done := map[string]string{}
	for _, r := range refs {
		src := *r.code
		if src == "" || strings.Contains(src, "://") {
			continue
		}
		if uri, ok := done[src]; ok {
			*r.code = uri
			continue
		}
		t, err := Scan(src, skip)
		if errors.Is(err, fs.ErrNotExist) {
			return out, fmt.Errorf("%s: step %q: code %q does not exist: restore it or fix the step's code: path", where(r.step.Pos), r.step.Path, src)
		}
		if err != nil {
			return out, fmt.Errorf("%s: step %q: %w", where(r.step.Pos), r.step.Path, err)
		}
		uploaded, err := put(t)
		if err != nil {
			return out, fmt.Errorf("step %q: upload code %q to datastore %q: %w", r.step.Path, src, d.Name, err)
		}
		uri := t.URI(d.Name)
		out = append(out, Result{Source: src, URI: uri, Files: t.Files(), Uploaded: uploaded})
		done[src] = uri
		*r.code = uri
	}
	return out, nil
}

// collect lists the code fields of a pipeline's steps, in plan order.
func collect(pl *plan.Pipeline, refs *[]codeRef) {
	for i := range pl.Steps {
		s := &pl.Steps[i]
		if s.Command != nil {
			*refs = append(*refs, codeRef{code: &s.Command.Code, step: *s})
		}
		if s.Parallel != nil {
			*refs = append(*refs, codeRef{code: &s.Parallel.Task.Code, step: *s})
		}
		if s.Pipeline != nil {
			collect(s.Pipeline, refs)
		}
	}
}

// where is a step's position as file:line, or its file alone.
func where(pos plan.Pos) string {
	if pos.Line == 0 {
		return pos.File
	}
	return fmt.Sprintf("%s:%d", pos.File, pos.Line)
}

// localRoot makes sure a local datastore's folder is there, creating its
// last element at most: creating a whole path on a machine that does not
// mount the shared storage would hide the snapshot from every worker.
func localRoot(d plan.Datastore) error {
	err := os.Mkdir(d.Path, 0o755)
	if err == nil || errors.Is(err, fs.ErrExist) {
		return nil
	}
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("the run's default datastore %q is the local folder %q, whose parent this machine does not have: porch writes the pipeline's code there for the workers; submit from a machine that mounts it, or use an s3 datastore", d.Name, d.Path)
	}
	return err
}
