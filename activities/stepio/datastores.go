package stepio

import (
	"context"
	"fmt"
	"path"
	"path/filepath"
	"sync"
	"time"

	"github.com/porch-pipelines/porch/compiler/plan"
)

// datastoreRefresh is how long a worker trusts its copy of the registered
// datastores.
const datastoreRefresh = 5 * time.Second

// datastores is the registered datastores as this worker last read them.
type datastores struct {
	mu     sync.Mutex
	read   time.Time
	byName map[string]plan.Datastore
}

// RefreshDatastores reads the registered datastores when the worker's copy
// is older than datastoreRefresh, or when a datastore one of uris names
// (a step's inputs and outputs) is not in it: one registered a moment ago
// must not map, unknown, to a folder of the porch home. A failed read keeps
// the old copy: the catalogue is the server's, and a step should not fail
// on a blip.
func (h *Host) RefreshDatastores(ctx context.Context, uris ...string) {
	if h.Datastores == nil {
		return
	}
	h.stores.mu.Lock()
	fresh := time.Since(h.stores.read) < datastoreRefresh && knowsAll(h.stores.byName, uris)
	h.stores.mu.Unlock()
	if fresh {
		return
	}
	list, err := h.Datastores(ctx)
	if err != nil {
		return
	}
	byName := make(map[string]plan.Datastore, len(list))
	for _, d := range list {
		byName[d.Name] = d
	}
	h.stores.mu.Lock()
	h.stores.byName, h.stores.read = byName, time.Now()
	h.stores.mu.Unlock()
}

// knowsAll says whether byName holds every datastore uris name, but the
// default one, which a server need not register (its folder is the porch
// home's).
func knowsAll(byName map[string]plan.Datastore, uris []string) bool {
	for _, u := range uris {
		if name, _, ok := plan.SplitDatastoreURI(u); ok && name != plan.DefaultDatastore {
			if _, found := byName[name]; !found {
				return false
			}
		}
	}
	return true
}

// DataURIs are the data paths of a step's inputs and outputs, for
// RefreshDatastores.
func DataURIs(inputs []plan.Input, outputs []plan.Output) []string {
	var out []string
	for _, in := range inputs {
		if in.Value.Kind == plan.ValueData && in.Value.Data != nil {
			out = append(out, in.Value.Data.Path)
		}
	}
	for _, o := range outputs {
		out = append(out, o.Path)
	}
	return out
}

// LocalPath maps a data URI to this worker's path, through its copy of the
// registered datastores.
func (h *Host) LocalPath(uri string) (string, error) {
	h.stores.mu.Lock()
	byName := h.stores.byName
	h.stores.mu.Unlock()
	return mapPath(h.Home, byName, uri)
}

// ArtifactsPath is where a step's artifacts (logs, porch's state) live on
// this worker: in a local datastore's folder, and under the porch home when
// the datastore is an object store.
func (h *Host) ArtifactsPath(uri string) (string, error) {
	if _, _, ok := h.ObjectLocation(uri); ok {
		return LocalPath(h.Home, uri)
	}
	return h.WritablePath(uri)
}

// MapPath maps a data URI to a local path: on a registered local datastore
// its folder, else the porch home's (LocalPath). The CLI uses it to show
// where outputs landed.
func MapPath(home string, stores []plan.Datastore, uri string) (string, error) {
	byName := make(map[string]plan.Datastore, len(stores))
	for _, d := range stores {
		byName[d.Name] = d
	}
	return mapPath(home, byName, uri)
}

func mapPath(home string, byName map[string]plan.Datastore, uri string) (string, error) {
	name, rest, ok := plan.SplitDatastoreURI(uri)
	if !ok {
		return LocalPath(home, uri)
	}
	d, found := byName[name]
	if !found {
		return LocalPath(home, uri)
	}
	switch d.Type {
	case plan.DatastoreLocal:
		if err := insideDatastore(uri, rest); err != nil {
			return "", err
		}
		return filepath.Join(d.Path, filepath.FromSlash(path.Clean("/"+rest))), nil
	default:
		return "", fmt.Errorf("datastore %q is of type %s, which this version of porch does not read yet: register a local datastore instead (porch datastore create -f)", name, d.Type)
	}
}

// ObjectLocation says whether uri is on one of stores that is an object store:
// which one, and the path inside it. The CLI uses it to read what workers
// copied there.
func ObjectLocation(stores []plan.Datastore, uri string) (plan.Datastore, string, bool) {
	name, rest, ok := plan.SplitDatastoreURI(uri)
	if !ok {
		return plan.Datastore{}, "", false
	}
	for _, d := range stores {
		if d.Name == name && d.ObjectStore() {
			return d, rest, true
		}
	}
	return plan.Datastore{}, "", false
}
