package stepio

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/porch-pipelines/porch/activities/objectstore"
)

// CopyData copies the file or folder at the URI from to the URI to and
// replaces what was there, on local and s3 datastores alike (an s3 folder
// is committed last, as a step's outputs are). It reports false, and
// leaves to alone, when from holds nothing. On a local datastore the copy
// is made beside to and renamed into place, so to never holds a part of
// it.
func (h *Host) CopyData(ctx context.Context, from, to string) (bool, error) {
	if err := h.checkApart(from, to); err != nil {
		return false, err
	}
	src, done, err := h.fetch(ctx, from)
	if err != nil || src == "" {
		return false, err
	}
	defer done()
	if d, p, ok := h.ObjectLocation(to); ok {
		s, err := h.ObjectStore(d)
		if err != nil {
			return false, StoreError(fmt.Sprintf("open datastore %q", d.Name), err)
		}
		if _, err := s.Upload(ctx, src, p); err != nil {
			return false, StoreError(fmt.Sprintf("copy to %s", to), err)
		}
		return true, nil
	}
	dst, err := h.WritablePath(to)
	if err != nil {
		return false, Invalid("%v", err)
	}
	return true, replaceTree(src, dst)
}

// checkApart refuses a copy into itself, or over its own source: either
// would never end or would destroy what it copies.
func (h *Host) checkApart(from, to string) error {
	_, _, s3From := h.ObjectLocation(from)
	_, _, s3To := h.ObjectLocation(to)
	if s3From || s3To {
		if strings.TrimSuffix(from, "/") == strings.TrimSuffix(to, "/") {
			return Invalid("cannot copy %s onto itself: give the output another path", from)
		}
		return nil
	}
	src, err1 := h.LocalPath(from)
	dst, err2 := h.LocalPath(to)
	if err := errors.Join(err1, err2); err != nil {
		return Invalid("%v", err)
	}
	if within(src, dst) || within(dst, src) {
		return Invalid("cannot copy %s to %s: one holds the other; give the output a path outside the trials' folders", from, to)
	}
	return nil
}

// within reports whether path p is dir or below it.
func within(p, dir string) bool {
	rel, err := filepath.Rel(dir, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// fetch makes the data at uri a local path: its own on a local datastore,
// a download under the porch home on s3 (removed by done). The path is ""
// when there is nothing at uri.
func (h *Host) fetch(ctx context.Context, uri string) (path string, done func(), err error) {
	nothing := func() {}
	d, p, ok := h.ObjectLocation(uri)
	if !ok {
		local, err := h.LocalPath(uri)
		if err != nil {
			return "", nothing, Invalid("%v", err)
		}
		if _, err := os.Lstat(local); errors.Is(err, fs.ErrNotExist) {
			return "", nothing, nil
		}
		return local, nothing, nil
	}
	s, err := h.ObjectStore(d)
	if err != nil {
		return "", nothing, StoreError(fmt.Sprintf("open datastore %q", d.Name), err)
	}
	scratch := filepath.Join(h.Home, "tmp")
	if err := os.MkdirAll(scratch, 0o755); err != nil {
		return "", nothing, err
	}
	tmp, err := os.MkdirTemp(scratch, "copy-*")
	if err != nil {
		return "", nothing, err
	}
	done = func() { os.RemoveAll(tmp) }
	local := filepath.Join(tmp, "data")
	if _, err := s.Download(ctx, p, local); err != nil {
		done()
		var oe *objectstore.Error
		if errors.As(err, &oe) && oe.NotFound() {
			return "", nothing, nil
		}
		return "", nothing, StoreError(fmt.Sprintf("copy from %s", uri), err)
	}
	return local, done, nil
}

// replaceTree copies src (a file or folder) into a temporary entry beside
// dst, then puts it in dst's place.
func replaceTree(src, dst string) error {
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return fmt.Errorf("copy to %s: %w", dst, err)
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dst), ".porch-copy-*")
	if err != nil {
		return fmt.Errorf("copy to %s: %w", dst, err)
	}
	defer os.RemoveAll(tmp)
	staged := filepath.Join(tmp, "data")
	if err := (treeCopy{what: "copy to " + dst}).copyTree(src, staged); err != nil {
		return err
	}
	if err := os.RemoveAll(dst); err != nil {
		return fmt.Errorf("copy to %s: replace what is there: %w", dst, err)
	}
	if err := os.Rename(staged, dst); err != nil {
		return fmt.Errorf("copy to %s: %w", dst, err)
	}
	return nil
}
