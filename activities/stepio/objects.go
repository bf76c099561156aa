package stepio

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"

	"go.temporal.io/sdk/temporal"

	"github.com/porch-pipelines/porch/activities/objectstore"
	"github.com/porch-pipelines/porch/activities/webdata"
	"github.com/porch-pipelines/porch/compiler/plan"
)

// objectStores are the object stores this worker has opened: registered
// datastores by name, containers named by URIs by their location.
type objectStores struct {
	mu    sync.Mutex
	byKey map[string]openStore
}

type openStore struct {
	def   plan.Datastore
	store *objectstore.Store
}

// ObjectLocation says whether uri is data on object storage, which store
// and the path inside it: azureml://datastores/<name>/paths/<p> on a
// registered s3, azure_blob or azure_data_lake_gen2 datastore, or an Azure
// Storage URI (wasbs://, abfss://, a blob's https:// URL), whose container
// is the registered Azure datastore of the same account and container
// when there is one (its endpoint settings hold), else an unregistered one.
func (h *Host) ObjectLocation(uri string) (plan.Datastore, string, bool) {
	h.stores.mu.Lock()
	byName := h.stores.byName
	h.stores.mu.Unlock()
	if su, ok, err := plan.ParseStorageURI(uri); ok && err == nil && !su.Web {
		d := su.Datastore()
		for _, r := range byName {
			if r.Type == d.Type && strings.EqualFold(r.AccountName, d.AccountName) && r.Container() == d.Container() {
				d = r
				break
			}
		}
		return d, su.Path, true
	}
	name, rest, ok := plan.SplitDatastoreURI(uri)
	if !ok {
		return plan.Datastore{}, "", false
	}
	d, found := byName[name]
	return d, rest, found && d.ObjectStore()
}

// WebURL says whether uri is a plain http(s) URL (not Azure Storage): data
// a worker downloads into its web cache.
func WebURL(uri string) bool {
	su, ok, err := plan.ParseStorageURI(uri)
	return ok && err == nil && su.Web
}

// ObjectStore opens (once per definition) an object datastore with this
// worker's credentials.
func (h *Host) ObjectStore(d plan.Datastore) (*objectstore.Store, error) {
	key := d.Name
	if key == "" {
		key = strings.Join([]string{d.Type, d.AccountName, d.Container(), d.Endpoint, d.Protocol}, "|")
	}
	h.objects.mu.Lock()
	defer h.objects.mu.Unlock()
	if o, ok := h.objects.byKey[key]; ok && o.def == d {
		return o.store, nil
	}
	s, err := objectstore.OpenWith(d, h.Transport)
	if err != nil {
		return nil, err
	}
	if h.objects.byKey == nil {
		h.objects.byKey = map[string]openStore{}
	}
	h.objects.byKey[key] = openStore{def: d, store: s}
	return s, nil
}

// StoreError is the activity error for a failed transfer: never retried
// when the store's answer says trying again cannot help (credentials
// refused, no such container or bucket: the message says what to fix),
// else retryable, as a network blip is. msg says what failed.
func StoreError(msg string, err error) error {
	var oe *objectstore.Error
	var we *webdata.Error
	if (errors.As(err, &oe) && oe.Permanent()) || (errors.As(err, &we) && we.Permanent) {
		return temporal.NewNonRetryableApplicationError(fmt.Sprintf("%s: %v", msg, err), DatastoreRefusedType, nil)
	}
	return temporal.NewApplicationError(fmt.Sprintf("%s: %v", msg, err), "DatastoreUnavailable")
}

// DatastoreRefusedType is the application error type of a transfer the
// storage refused for good: its credentials, or a missing container or
// bucket. Never retried.
const DatastoreRefusedType = "DatastoreRefused"

// WebFile fetches a web URL into this worker's cache (once per version of
// the file) and returns it there.
func (h *Host) WebFile(ctx context.Context, u string) (webdata.File, error) {
	return h.webCache().Fetch(ctx, u)
}

// WebVersion asks a web URL's server for the file's version (its ETag,
// else its Last-Modified) without fetching it; "" when it gives neither.
func (h *Host) WebVersion(ctx context.Context, u string) (string, error) {
	return h.webCache().Version(ctx, u)
}

func (h *Host) webCache() *webdata.Cache {
	h.webOnce.Do(func() {
		h.web = &webdata.Cache{Dir: filepath.Join(h.Home, "cache", "web")}
		if h.Transport != nil {
			h.web.Client = &http.Client{Transport: h.Transport}
		}
	})
	return h.web
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
		return "", Invalid("step %q: input %q is on %s, which this kind of step cannot read yet", step, inp.Name, describe(d))
	}
	s, err := h.ObjectStore(d)
	if err != nil {
		return "", StoreError(fmt.Sprintf("step %q: input %q: open %s", step, inp.Name, describe(d)), err)
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
		return "", StoreError(fmt.Sprintf("step %q: download input %q", step, inp.Name), err)
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
			return StoreError(fmt.Sprintf("step %q: output %q: open datastore %q", step, u.Name, u.Store.Name), err)
		}
		if _, err := s.Upload(ctx, u.Local, u.Path); err != nil {
			return StoreError(fmt.Sprintf("step %q: upload output %q", step, u.Name), err)
		}
	}
	return nil
}

// describe names a datastore in messages: `datastore "x"`, or for a
// container named by a URI, the container and account.
func describe(d plan.Datastore) string {
	if d.Name != "" {
		return fmt.Sprintf("datastore %q", d.Name)
	}
	return fmt.Sprintf("container %q of storage account %q", d.Container(), d.AccountName)
}
