package stepio

import (
	"context"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"sync"

	"go.temporal.io/sdk/temporal"

	"github.com/porch-pipelines/porch/activities/objectstore"
	"github.com/porch-pipelines/porch/compiler/plan"
)

// objectStores are the s3 datastores this worker has opened, by name.
type objectStores struct {
	mu     sync.Mutex
	byName map[string]openStore
}

type openStore struct {
	def   plan.Datastore
	store *objectstore.Store
}

// S3Location says whether uri is on a registered s3 datastore, which one,
// and the path inside it.
func (h *Host) S3Location(uri string) (plan.Datastore, string, bool) {
	name, rest, ok := plan.SplitDatastoreURI(uri)
	if !ok {
		return plan.Datastore{}, "", false
	}
	h.stores.mu.Lock()
	d, found := h.stores.byName[name]
	h.stores.mu.Unlock()
	return d, rest, found && d.Type == plan.DatastoreS3
}

// ObjectStore opens (once per definition) an s3 datastore with this
// worker's credentials.
func (h *Host) ObjectStore(d plan.Datastore) (*objectstore.Store, error) {
	h.objects.mu.Lock()
	defer h.objects.mu.Unlock()
	if o, ok := h.objects.byName[d.Name]; ok && o.def == d {
		return o.store, nil
	}
	s, err := objectstore.OpenWith(d, h.Transport)
	if err != nil {
		return nil, err
	}
	if h.objects.byName == nil {
		h.objects.byName = map[string]openStore{}
	}
	h.objects.byName[d.Name] = openStore{def: d, store: s}
	return s, nil
}

// Upload is an output to copy to an s3 datastore once the step succeeds.
type Upload struct {
	Name  string
	Local string
	Store plan.Datastore
	Path  string
}

// downloadInput copies an input on an s3 datastore into the step's working
// folder and returns its local path: a file for a single object, a folder
// otherwise. Every input mode downloads on object storage.
func (h *Host) downloadInput(ctx context.Context, step string, inp plan.Input, d plan.Datastore, p, dir string) (string, error) {
	if dir == "" {
		return "", Invalid("step %q: input %q is on s3 datastore %q, which this kind of step cannot read yet", step, inp.Name, d.Name)
	}
	s, err := h.ObjectStore(d)
	if err != nil {
		return "", temporal.NewApplicationError(fmt.Sprintf("step %q: input %q: open datastore %q: %v", step, inp.Name, d.Name, err), "DatastoreUnavailable")
	}
	dst := filepath.Join(dir, ".porch-inputs", inp.Name)
	if err := os.RemoveAll(dst); err != nil {
		return "", err
	}
	if inp.Type == "uri_file" {
		// The file keeps its own name, in a folder of its own, as
		// copyInput keeps a local one's.
		dst = filepath.Join(dst, path.Base(p))
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return "", err
	}
	if _, err := s.Download(ctx, p, dst); err != nil {
		return "", temporal.NewApplicationError(fmt.Sprintf("step %q: download input %q from datastore %q: %v", step, inp.Name, d.Name, err), "DatastoreUnavailable")
	}
	return dst, nil
}

// CommitUploads copies a succeeded step's outputs on s3 datastores from
// their staging folders. A failed upload fails the step with a retryable
// error; the upload writes its commit marker last, so a partial output is
// never taken for a whole one.
func (h *Host) CommitUploads(ctx context.Context, step string, ups []Upload) error {
	for _, u := range ups {
		s, err := h.ObjectStore(u.Store)
		if err != nil {
			return temporal.NewApplicationError(fmt.Sprintf("step %q: output %q: open datastore %q: %v", step, u.Name, u.Store.Name, err), "DatastoreUnavailable")
		}
		if _, err := s.Upload(ctx, u.Local, u.Path); err != nil {
			return temporal.NewApplicationError(fmt.Sprintf("step %q: upload output %q to datastore %q: %v: the step is retried", step, u.Name, u.Store.Name, err), "DatastoreUnavailable")
		}
	}
	return nil
}
