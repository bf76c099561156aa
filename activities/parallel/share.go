package parallel

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/porch-pipelines/porch/activities/objectstore"
	"github.com/porch-pipelines/porch/activities/stepio"
)

// stepShare is where the files the workers of a parallel step share live:
// its spec, manifest, done records and results, and its logs. Each worker
// reads and writes them in its local copy of the step's artifacts folder
// (parallelFolders.artifacts), and the share makes them visible to the
// others. On a local datastore that folder is the shared one and the share
// does nothing; on an s3 datastore every worker has its own copy under its
// porch home, and the share publishes files to the object store and fetches
// them from it. A file is always written whole locally first and then
// published as one object, so no reader sees a part of it.
//
// Paths (rel) are slash-separated and relative to the artifacts folder.
type stepShare interface {
	// publish makes the local file rel visible to every worker.
	publish(ctx context.Context, rel string) error
	// fetch brings the shared copy of rel into the local folder; false
	// when no worker published it.
	fetch(ctx context.Context, rel string) (bool, error)
	// list returns the shared files under the folder rel, as paths
	// relative to the artifacts folder, in byte order.
	list(ctx context.Context, dir string) ([]string, error)
	// remove deletes the folders rel, shared and local copies.
	remove(ctx context.Context, dirs ...string) error
	// forget drops this worker's local copies of the folders rel, which
	// may be stale, keeping the shared ones.
	forget(dirs ...string) error
	// appendLine adds data to the shared file rel. Only one worker at a
	// time may append to a file (the workflow serialises its callers).
	appendLine(ctx context.Context, rel string, data []byte) error
	// publishLogs publishes this worker's logs/ (node names this worker).
	// Files every worker appends to are published one per node.
	publishLogs(ctx context.Context, node string) error
}

// localShare is a step's artifacts folder on a local datastore, which every
// worker sees.
type localShare struct{ dir string }

func (s localShare) local(rel string) string { return filepath.Join(s.dir, filepath.FromSlash(rel)) }

func (localShare) publish(context.Context, string) error { return nil }

func (s localShare) fetch(_ context.Context, rel string) (bool, error) {
	_, err := os.Stat(s.local(rel))
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	return err == nil, err
}

func (s localShare) list(_ context.Context, dir string) ([]string, error) {
	return listLocal(s.dir, dir)
}

// listLocal lists the files under root/dir as slash paths relative to root.
func listLocal(root, dir string) ([]string, error) {
	var out []string
	err := filepath.WalkDir(filepath.Join(root, filepath.FromSlash(dir)), func(p string, d fs.DirEntry, err error) error {
		if errors.Is(err, fs.ErrNotExist) {
			return fs.SkipAll
		}
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(root, p)
		out = append(out, filepath.ToSlash(rel))
		return err
	})
	return out, err
}

func (s localShare) remove(_ context.Context, dirs ...string) error {
	for _, d := range dirs {
		if err := os.RemoveAll(s.local(d)); err != nil {
			return err
		}
	}
	return nil
}

func (localShare) forget(...string) error { return nil }

func (s localShare) appendLine(_ context.Context, rel string, data []byte) error {
	return appendBytes(s.local(rel), data)
}

func (localShare) publishLogs(context.Context, string) error { return nil }

// objectShare is a step's artifacts folder on an s3 datastore, with this
// worker's copy in dir.
type objectShare struct {
	dir    string
	store  *objectstore.Store
	ds     string // the datastore's name, for messages
	prefix string // the artifacts folder's path in the datastore
}

func (s objectShare) local(rel string) string { return filepath.Join(s.dir, filepath.FromSlash(rel)) }
func (s objectShare) key(rel string) string   { return s.prefix + "/" + rel }

// unavailable is a failure to reach the datastore: retried.
func (s objectShare) unavailable(err error) error {
	return stepio.StoreError(fmt.Sprintf("datastore %q", s.ds), err)
}

func (s objectShare) publish(ctx context.Context, rel string) error {
	if _, err := s.store.PutFile(ctx, s.local(rel), s.key(rel)); err != nil {
		return s.unavailable(err)
	}
	return nil
}

func (s objectShare) fetch(ctx context.Context, rel string) (bool, error) {
	err := s.store.GetFile(ctx, s.key(rel), s.local(rel))
	var oe *objectstore.Error
	if errors.As(err, &oe) && oe.NotFound() {
		return false, nil
	}
	if err != nil {
		return false, s.unavailable(err)
	}
	return true, nil
}

func (s objectShare) list(ctx context.Context, dir string) ([]string, error) {
	objs, err := s.store.List(ctx, s.key(dir))
	if err != nil {
		return nil, s.unavailable(err)
	}
	out := make([]string, len(objs))
	for i, o := range objs {
		out[i] = dir + "/" + o.Path
	}
	return out, nil
}

func (s objectShare) remove(ctx context.Context, dirs ...string) error {
	for _, d := range dirs {
		if err := s.store.RemoveAll(ctx, s.key(d)); err != nil {
			return s.unavailable(err)
		}
	}
	return s.forget(dirs...)
}

func (s objectShare) forget(dirs ...string) error {
	for _, d := range dirs {
		if err := os.RemoveAll(s.local(d)); err != nil {
			return err
		}
	}
	return nil
}

func (s objectShare) appendLine(ctx context.Context, rel string, data []byte) error {
	if err := os.Remove(s.local(rel)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if _, err := s.fetch(ctx, rel); err != nil {
		return err
	}
	if err := appendBytes(s.local(rel), data); err != nil {
		return err
	}
	return s.publish(ctx, rel)
}

// publishLogs publishes every file of this worker's logs/ but the progress
// overview, which appendLine keeps on the store. An object cannot be
// appended to, so the files every worker appends to (the per-attempt
// report, porch's notes) are published one per node:
// processed_mini-batches.csv as processed_mini-batches.<node>.csv.
func (s objectShare) publishLogs(ctx context.Context, node string) error {
	files, err := listLocal(s.dir, "logs")
	if err != nil {
		return err
	}
	for _, rel := range files {
		base := path.Base(rel)
		switch {
		case strings.HasPrefix(base, "job_progress_overview."):
			continue
		case rel == processedReport || rel == porchNotes:
			ext := path.Ext(rel)
			shared := strings.TrimSuffix(rel, ext) + "." + node + ext
			if _, err := s.store.PutFile(ctx, s.local(rel), s.key(shared)); err != nil {
				return s.unavailable(err)
			}
			continue
		}
		if err := s.publish(ctx, rel); err != nil {
			return err
		}
	}
	return nil
}

// The files of a step's logs every worker appends to.
const (
	processedReport = "logs/sys/job_report/processed_mini-batches.csv"
	porchNotes      = "logs/sys/porch.txt"
)

// publishDir publishes every local file under the folder rel.
func publishDir(ctx context.Context, f parallelFolders, rel string) error {
	files, err := listLocal(f.artifacts, rel)
	if err != nil {
		return err
	}
	for _, file := range files {
		if err := f.share.publish(ctx, file); err != nil {
			return err
		}
	}
	return nil
}
