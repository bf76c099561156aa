package activities

import (
	"context"
	"fmt"
	"path"
	"path/filepath"
	"strings"
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

// refreshDatastores reads the registered datastores when the worker's copy
// is older than datastoreRefresh. A failed read keeps the old copy: the
// catalogue is the server's, and a step should not fail on a blip.
func (a *Activities) refreshDatastores(ctx context.Context) {
	if a.Datastores == nil {
		return
	}
	a.stores.mu.Lock()
	fresh := time.Since(a.stores.read) < datastoreRefresh
	a.stores.mu.Unlock()
	if fresh {
		return
	}
	list, err := a.Datastores(ctx)
	if err != nil {
		return
	}
	byName := make(map[string]plan.Datastore, len(list))
	for _, d := range list {
		byName[d.Name] = d
	}
	a.stores.mu.Lock()
	a.stores.byName, a.stores.read = byName, time.Now()
	a.stores.mu.Unlock()
}

// localPath maps a data URI to this worker's path, through its copy of the
// registered datastores.
func (a *Activities) localPath(uri string) (string, error) {
	a.stores.mu.Lock()
	byName := a.stores.byName
	a.stores.mu.Unlock()
	return mapPath(a.Home, byName, uri)
}

// artifactsPath is where a step's artifacts (logs, porch's state) live on
// this worker: in a local datastore's folder, and under the porch home when
// the datastore is an object store.
func (a *Activities) artifactsPath(uri string) (string, error) {
	if _, _, ok := a.s3Location(uri); ok {
		return LocalPath(a.Home, uri)
	}
	return a.localPath(uri)
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
	name, rest, ok := splitDatastoreURI(uri)
	if !ok {
		return LocalPath(home, uri)
	}
	d, found := byName[name]
	if !found {
		return LocalPath(home, uri)
	}
	switch d.Type {
	case plan.DatastoreLocal:
		for _, seg := range strings.Split(rest, "/") {
			if seg == ".." {
				return "", fmt.Errorf("datastore URI %q leaves its datastore with \"..\": give a path inside the datastore", uri)
			}
		}
		return filepath.Join(d.Path, filepath.FromSlash(path.Clean("/"+rest))), nil
	default:
		return "", fmt.Errorf("datastore %q is of type %s, which this version of porch does not read yet: register a local datastore instead (porch datastore create -f)", name, d.Type)
	}
}

// splitDatastoreURI splits azureml://datastores/<name>/paths/<rest>.
func splitDatastoreURI(uri string) (name, rest string, ok bool) {
	tail, found := strings.CutPrefix(uri, datastorePrefix)
	if !found {
		return "", "", false
	}
	name, rest, ok = strings.Cut(tail, "/paths/")
	if !ok {
		name, ok = strings.CutSuffix(tail, "/paths")
	}
	return name, rest, ok && name != "" && !strings.Contains(name, "/")
}

// S3Location says whether uri is on one of stores that is an s3 datastore:
// which one, and the path inside it. The CLI uses it to read what workers
// copied there.
func S3Location(stores []plan.Datastore, uri string) (plan.Datastore, string, bool) {
	name, rest, ok := splitDatastoreURI(uri)
	if !ok {
		return plan.Datastore{}, "", false
	}
	for _, d := range stores {
		if d.Name == name && d.Type == plan.DatastoreS3 {
			return d, rest, true
		}
	}
	return plan.Datastore{}, "", false
}
