package stepio

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/porch-pipelines/porch/compiler/plan"
)

// TestAStepNamingADatastoreRegisteredAMomentAgoSeesIt: the worker's copy of
// the datastores is fresh, but a step names one registered since: the
// worker reads them again rather than map it, unknown, into its home.
func TestAStepNamingADatastoreRegisteredAMomentAgoSeesIt(t *testing.T) {
	home, store := t.TempDir(), t.TempDir()
	registered := []plan.Datastore{}
	reads := 0
	h := &Host{Home: home, Datastores: func(context.Context) ([]plan.Datastore, error) {
		reads++
		return registered, nil
	}}
	h.RefreshDatastores(context.Background())
	registered = append(registered, plan.Datastore{Name: "fresh", Type: plan.DatastoreLocal, Path: store})
	uri := "azureml://datastores/fresh/paths/out/"
	h.RefreshDatastores(context.Background(), plan.DefaultOutputURI(plan.DefaultDatastore, "r", "s", "o"))
	assert.Equal(t, 1, reads, "the default datastore needs no registration: the copy is fresh")
	h.RefreshDatastores(context.Background(), uri)
	assert.Equal(t, 2, reads, "an unknown datastore makes the worker read them again")
	p, err := h.LocalPath(uri)
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(store, "out"), p)
}
