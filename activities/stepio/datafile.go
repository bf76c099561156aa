package stepio

import (
	"bytes"
	"context"
	"fmt"

	"github.com/porch-pipelines/porch/activities/atomicfile"
)

// WriteFile writes data to the file at a datastore URI, whole or not at
// all: on an object store as one object, on a local datastore through a
// temporary file renamed into place, so a reader sees the old file or the
// new one. It is how porch writes its own small files (a run's record)
// on whatever kind of datastore the run uses.
func (h *Host) WriteFile(ctx context.Context, uri string, data []byte) error {
	h.RefreshDatastores(ctx, uri)
	if d, p, ok := h.ObjectLocation(uri); ok {
		s, err := h.ObjectStore(d)
		if err != nil {
			return fmt.Errorf("open datastore %q: %w", d.Name, err)
		}
		return s.Put(ctx, p, bytes.NewReader(data), int64(len(data)))
	}
	local, err := h.LocalPath(uri)
	if err != nil {
		return err
	}
	if err := atomicfile.Write(local, data); err != nil {
		return fmt.Errorf("write %s: %w", local, err)
	}
	return nil
}
