package stepio

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/porch-pipelines/porch/compiler/plan"
)

// WritablePath maps a data URI a step writes (an output, a copy's
// destination, a step's artifacts) to this worker's path, as LocalPath
// does, and refuses a path that a symbolic link inside a local datastore
// leads out of it: `ln -s /tmp/outside <datastore>/evil_link` must not let
// an output at evil_link/sub write to /tmp/outside. The datastore's own
// folder may be a link; links inside it may point anywhere inside it.
func (h *Host) WritablePath(uri string) (string, error) {
	p, err := h.LocalPath(uri)
	if err != nil {
		return "", err
	}
	root, ok := h.localRoot(uri)
	if !ok {
		return p, nil
	}
	return p, staysInside(root, p)
}

// localRoot is the folder of the local datastore uri is in, if it is in
// one: a registered local datastore's path, else the porch home's folder
// of that name.
func (h *Host) localRoot(uri string) (string, bool) {
	name, _, ok := plan.SplitDatastoreURI(uri)
	if !ok {
		return "", false
	}
	h.stores.mu.Lock()
	d, found := h.stores.byName[name]
	h.stores.mu.Unlock()
	switch {
	case !found:
		return filepath.Join(h.Home, "datastores", name), true
	case d.Type == plan.DatastoreLocal:
		return d.Path, true
	}
	return "", false
}

// staysInside checks the part of p (a path below root) that exists: none
// of its folders may be a symbolic link that leads outside root, or
// nowhere. What does not exist yet is created as real folders.
func staysInside(root, p string) error {
	realRoot, err := filepath.EvalSymlinks(root)
	if errors.Is(err, fs.ErrNotExist) {
		return nil // nothing below it exists either
	}
	if err != nil {
		return err
	}
	rel, err := filepath.Rel(root, p)
	if err != nil || rel == "." || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return nil
	}
	cur := root
	for _, seg := range strings.Split(rel, string(filepath.Separator)) {
		cur = filepath.Join(cur, seg)
		info, err := os.Lstat(cur)
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		if info.Mode()&fs.ModeSymlink == 0 {
			continue
		}
		target, err := filepath.EvalSymlinks(cur)
		if err != nil {
			return fmt.Errorf("%s is a symbolic link that leads nowhere (%v): porch does not write through it; remove the link or give another path", cur, err)
		}
		if !within(target, realRoot) {
			return fmt.Errorf("%s is a symbolic link to %s, outside its datastore's folder %s: porch writes only inside a datastore; remove the link, or give a path that does not go through it", cur, target, root)
		}
	}
	return nil
}
