package cli

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/porch-pipelines/porch/activities/codesnapshot"
	"github.com/porch-pipelines/porch/compiler/plan"
	"github.com/porch-pipelines/porch/workflows"
)

// snapshotCode uploads the plan's code folders as snapshots when its
// workers may be on other machines: the run is on a server porch did not
// embed, and its default datastore is registered there (s3, or a local
// folder every worker sees). The plan then names the snapshots, which
// workers fetch. Otherwise workers read the code at its absolute path, as
// the embedded server's in-process worker does.
func (a *app) snapshotCode(ctx context.Context, sess *session, p *plan.Plan) error {
	if sess.embedded() {
		return nil
	}
	rctx, cancel := context.WithTimeout(ctx, compileCatalogTimeout)
	cat, err := workflows.GetCatalog(rctx, sess.client)
	cancel()
	if err != nil {
		fmt.Fprintf(a.stderr, "porch: warning: cannot read the server's datastores (%v): code is not snapshotted, so workers must see it at its local path\n", err)
		return nil
	}
	sess.stores, sess.storesRead = cat.Datastores, true
	var def *plan.Datastore
	for i, d := range cat.Datastores {
		if d.Name == p.Settings.DefaultDatastore {
			def = &cat.Datastores[i]
		}
	}
	if def == nil {
		return nil
	}
	results, err := codesnapshot.SnapshotPlan(ctx, p, *def, sess.settings.Home)
	for _, r := range results {
		how := "uploaded"
		if !r.Uploaded {
			how = "already uploaded"
		}
		fmt.Fprintf(a.stderr, "porch: code %s (%d files): %s %s\n", relPath(r.Source), r.Files, how, r.URI)
	}
	return err
}

// relPath shows a path relative to the working folder when it is inside.
func relPath(p string) string {
	wd, err := filepath.Abs(".")
	if err != nil {
		return p
	}
	if rel, err := filepath.Rel(wd, p); err == nil && filepath.IsLocal(rel) {
		return rel
	}
	return p
}
