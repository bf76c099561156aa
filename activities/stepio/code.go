package stepio

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/porch-pipelines/porch/activities/codesnapshot"
)

// codePath is where a step's code is on this worker: the absolute path the
// plan names, or for a code snapshot (a datastore URI, see codesnapshot)
// its folder on a local datastore, or its copy in this worker's cache,
// fetched once from an object datastore (s3, Azure).
func (h *Host) codePath(ctx context.Context, step, code string) (string, error) {
	if !strings.HasPrefix(code, DatastorePrefix) {
		return code, nil
	}
	d, p, onObjects := h.ObjectLocation(code)
	if !onObjects {
		local, err := h.LocalPath(code)
		if err != nil {
			return "", Invalid("step %q: code %q: %v", step, code, err)
		}
		if _, err := os.Lstat(local); errors.Is(err, fs.ErrNotExist) {
			return "", Invalid("step %q: code snapshot %q is not at %q on this worker: a local datastore must be the same folder on every worker and on the machine that submits; submit the run again to upload the code", step, code, local)
		}
		return local, nil
	}
	hash, name, ok := codesnapshot.ParsePath(strings.TrimSuffix(p, "/"))
	if !ok {
		return "", Invalid("step %q: code %q is on datastore %q but is not a code snapshot (LocalUpload/<sha256>/<name>): point code: at a local folder, which porch uploads when the run is submitted", step, code, d.Name)
	}
	s, err := h.ObjectStore(d)
	if err != nil {
		return "", StoreError(fmt.Sprintf("step %q: code: open datastore %q", step, d.Name), err)
	}
	h.snapshotsOnce.Do(func() { h.snapshots.Dir = filepath.Join(h.Home, "cache", "code") })
	local, _, err := h.snapshots.Fetch(ctx, s, hash, name)
	if errors.Is(err, codesnapshot.ErrMissing) {
		return "", Invalid("step %q: code %q on datastore %q: %v", step, code, d.Name, err)
	}
	if err != nil {
		return "", StoreError(fmt.Sprintf("step %q: fetch code %q from datastore %q", step, code, d.Name), err)
	}
	return local, nil
}
