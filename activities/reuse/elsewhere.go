package reuse

import (
	"context"
	"os"
	"path/filepath"
	"slices"

	"github.com/porch-pipelines/porch/compiler/plan"
)

// latestElsewhere finds, for a step whose run's default datastore holds
// no record of it, the newest latest record of the step on another
// datastore this worker knows (registered ones, the porch home's
// folders), and which datastore holds it: a run whose default_datastore
// changed then says so rather than "first run". Only a reason depends on
// it, so a datastore that cannot be read is passed over.
func (a *Activities) latestElsewhere(ctx context.Context, in DecideInput) (*Record, string) {
	var best *Record
	where := ""
	for _, ds := range a.datastoreNames(ctx) {
		if ds == in.DefaultDatastore {
			continue
		}
		r, err := readRecord(ctx, a.Host, LatestURI(ds, in.Pipeline, in.Step.Path))
		if err != nil || r == nil {
			continue
		}
		if best == nil || r.Created.After(best.Created) {
			best, where = r, ds
		}
	}
	return best, where
}

// datastoreNames are the datastores this worker knows, sorted: the
// default one, the registered ones, and the folders of the porch home's
// datastores.
func (a *Activities) datastoreNames(ctx context.Context) []string {
	names := []string{plan.DefaultDatastore}
	var uris []string
	if a.Host.Datastores != nil {
		if list, err := a.Host.Datastores(ctx); err == nil {
			for _, d := range list {
				names = append(names, d.Name)
				uris = append(uris, KeyURI(d.Name, "x"))
			}
		}
	}
	// The worker's copy of the catalogue must know each registered one,
	// so that an s3 datastore is read as one.
	a.Host.RefreshDatastores(ctx, uris...)
	if entries, err := os.ReadDir(filepath.Join(a.Host.Home, "datastores")); err == nil {
		for _, e := range entries {
			if e.IsDir() && plan.ValidDatastoreName(e.Name()) {
				names = append(names, e.Name())
			}
		}
	}
	slices.Sort(names)
	return slices.Compact(names)
}
