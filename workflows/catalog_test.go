package workflows

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/porch-pipelines/porch/compiler/plan"
)

// catalogStep is one update sent to the catalogue workflow and what it must
// do: err "" means accepted and applied, otherwise a substring of the
// rejection.
type catalogStep struct {
	update string
	arg    any
	err    string
}

// runCatalog runs the catalogue workflow from in, sends the steps in order
// (each a delayed callback, so each lands in its own workflow task), then
// queries the catalogue and cancels the workflow, or with suggestCAN lets
// Temporal suggest continue-as-new.
func runCatalog(t *testing.T, in CatalogInput, steps []catalogStep, suggestCAN bool) (plan.Catalog, *testsuite.TestWorkflowEnvironment) {
	var ts testsuite.WorkflowTestSuite
	env := ts.NewTestWorkflowEnvironment()
	Register(env)
	var got plan.Catalog
	answered := 0
	for i, s := range steps {
		env.RegisterDelayedCallback(func() {
			env.UpdateWorkflow(s.update, "", &testsuite.TestUpdateCallback{
				OnAccept: func() {},
				OnReject: func(err error) {
					answered++
					if s.err == "" {
						t.Errorf("update %d (%s) rejected: %v", i, s.update, err)
					} else {
						assert.Contains(t, err.Error(), s.err, "update %d", i)
					}
				},
				OnComplete: func(_ any, err error) {
					answered++
					if s.err != "" {
						t.Errorf("update %d (%s) accepted, want rejection %q", i, s.update, s.err)
					}
					assert.NoError(t, err, "update %d", i)
				},
			}, s.arg)
		}, time.Duration(i+1)*time.Second)
	}
	env.RegisterDelayedCallback(func() {
		v, err := env.QueryWorkflow(CatalogQuery)
		require.NoError(t, err)
		require.NoError(t, v.Get(&got))
		if suggestCAN {
			env.SetContinueAsNewSuggested(true)
			return
		}
		env.CancelWorkflow()
	}, time.Duration(len(steps)+1)*time.Second)
	env.ExecuteWorkflow(CatalogName, in)
	require.True(t, env.IsWorkflowCompleted())
	require.Equal(t, len(steps), answered, "every update is either rejected or completed")
	return got, env
}

func local(name, dir string) CatalogEntry {
	return CatalogEntry{Datastore: &plan.Datastore{Name: name, Type: plan.DatastoreLocal, Path: dir}}
}

func data(name, version, p string) CatalogEntry {
	return CatalogEntry{Data: &plan.Asset{Name: name, Version: version, Type: "uri_folder", Path: p}}
}

func component(name, version string) CatalogEntry {
	return CatalogEntry{Component: &plan.ComponentAsset{Name: name, Version: version, Source: "type: command\n", Dir: "/src"}}
}

func TestCatalogRegistersAndReplacesDatastores(t *testing.T) {
	cat, _ := runCatalog(t, CatalogInput{}, []catalogStep{
		{update: RegisterUpdate, arg: local("shared", "/mnt/a")},
		{update: RegisterUpdate, arg: local("other", "/mnt/b")},
		{update: RegisterUpdate, arg: local("shared", "/mnt/c")},
		{update: RegisterUpdate, arg: local("rel", "mnt/c"), err: `expected an absolute path`},
		{update: RegisterUpdate, arg: CatalogEntry{Datastore: &plan.Datastore{Name: "blob", Type: "azure_blob"}},
			err: `needs an account and a container`},
		{update: RegisterUpdate, arg: CatalogEntry{Datastore: &plan.Datastore{Name: "share", Type: "azure_file"}},
			err: `porch supports local, s3, azure_blob and azure_data_lake_gen2`},
		{update: RegisterUpdate, arg: CatalogEntry{Datastore: &plan.Datastore{Name: "s", Type: plan.DatastoreS3}},
			err: `has no bucket`},
		{update: RegisterUpdate, arg: CatalogEntry{}, err: `exactly one of`},
		{update: RegisterUpdate, arg: local("bad name", "/x"), err: `datastore name "bad name"`},
	}, false)
	// Replaced in place: registration order is kept.
	assert.Equal(t, []plan.Datastore{
		{Name: "shared", Type: plan.DatastoreLocal, Path: "/mnt/c"},
		{Name: "other", Type: plan.DatastoreLocal, Path: "/mnt/b"},
	}, cat.Datastores)
}

func TestCatalogDataVersionsAreImmutable(t *testing.T) {
	cat, _ := runCatalog(t, CatalogInput{}, []catalogStep{
		{update: RegisterUpdate, arg: data("iris", "1", "/d/1")},
		{update: RegisterUpdate, arg: data("iris", "2", "/d/2")},
		{update: RegisterUpdate, arg: data("iris", "1", "/d/other"),
			err: `data asset "iris" version "1" is already registered`},
		{update: RegisterUpdate, arg: data("iris", "latest", "/d/3"), err: `has version "latest"`},
		{update: RegisterUpdate, arg: component("train", "1")},
		{update: RegisterUpdate, arg: component("train", "1"), err: `component "train" version "1" is already registered`},
	}, false)
	require.Len(t, cat.Data, 2)
	assert.Equal(t, "/d/1", cat.Data[0].Path)
	latest, ok := cat.FindData("iris", "latest")
	require.True(t, ok)
	assert.Equal(t, "2", latest.Version)
	require.Len(t, cat.Components, 1)
}

func TestCatalogLatestIsTheLastRegistered(t *testing.T) {
	cat, _ := runCatalog(t, CatalogInput{}, []catalogStep{
		{update: RegisterUpdate, arg: data("iris", "10", "/d/10")},
		{update: RegisterUpdate, arg: data("iris", "9", "/d/9")},
	}, false)
	latest, ok := cat.FindData("iris", "")
	require.True(t, ok)
	assert.Equal(t, "9", latest.Version, "latest is the last registered, as in Azure ML, not the highest")
}

func TestCatalogRemove(t *testing.T) {
	cat, _ := runCatalog(t, CatalogInput{}, []catalogStep{
		{update: RegisterUpdate, arg: local("shared", "/mnt/a")},
		{update: RegisterUpdate, arg: data("iris", "1", "/d/1")},
		{update: RegisterUpdate, arg: data("iris", "2", "/d/2")},
		{update: RegisterUpdate, arg: component("train", "1")},
		{update: RemoveUpdate, arg: CatalogRemoval{Kind: KindData, Name: "iris", Version: "1"}},
		{update: RemoveUpdate, arg: CatalogRemoval{Kind: KindData, Name: "iris", Version: "1"},
			err: `no data asset "iris" version "1" is registered`},
		{update: RemoveUpdate, arg: CatalogRemoval{Kind: KindData, Name: "iris"}, err: `needs a version`},
		{update: RemoveUpdate, arg: CatalogRemoval{Kind: KindDatastore, Name: "shared"}},
		{update: RemoveUpdate, arg: CatalogRemoval{Kind: KindDatastore, Name: "shared"}, err: `no datastore "shared"`},
		{update: RemoveUpdate, arg: CatalogRemoval{Kind: KindComponent, Name: "train", Version: "1"}},
	}, false)
	assert.Empty(t, cat.Datastores)
	assert.Empty(t, cat.Components)
	require.Len(t, cat.Data, 1)
	assert.Equal(t, "2", cat.Data[0].Version)
}

func TestCatalogContinuesAsNewCarryingTheCatalogue(t *testing.T) {
	start := CatalogInput{Catalog: plan.Catalog{Datastores: []plan.Datastore{{Name: "old", Type: plan.DatastoreLocal, Path: "/old"}}}}
	before, env := runCatalog(t, start, []catalogStep{
		{update: RegisterUpdate, arg: data("iris", "1", "/d/1")},
	}, true)
	assert.Len(t, before.Data, 1)
	var can *workflow.ContinueAsNewError
	require.ErrorAs(t, env.GetWorkflowError(), &can)
	assert.Equal(t, CatalogName, can.WorkflowType.Name)
	var next CatalogInput
	require.NoError(t, converter.GetDefaultDataConverter().FromPayloads(can.Input, &next))
	assert.Equal(t, start.Catalog.Datastores, next.Catalog.Datastores)
	require.Len(t, next.Catalog.Data, 1)
	assert.Equal(t, "iris", next.Catalog.Data[0].Name)
}

func model(name, version, typ string) CatalogEntry {
	return CatalogEntry{Model: &plan.Asset{Name: name, Version: version, Type: typ, Path: "/m/" + name + "/" + version}}
}

// TestCatalogModels registers, refuses and removes models as data assets
// are: immutable versions, their own types, a name space of their own.
func TestCatalogModels(t *testing.T) {
	cat, _ := runCatalog(t, CatalogInput{}, []catalogStep{
		{update: RegisterUpdate, arg: data("clf", "1", "/d/clf")},
		{update: RegisterUpdate, arg: model("clf", "1", "custom_model")},
		{update: RegisterUpdate, arg: model("clf", "2", "mlflow_model")},
		{update: RegisterUpdate, arg: model("clf", "3", "triton_model")},
		{update: RegisterUpdate, arg: model("clf", "1", "custom_model"), err: `model "clf" version "1" is already registered`},
		{update: RegisterUpdate, arg: model("clf", "4", "uri_folder"),
			err: `model "clf" has type "uri_folder": expected custom_model, mlflow_model, triton_model`},
		{update: RegisterUpdate, arg: CatalogEntry{Model: &plan.Asset{Name: "clf", Version: "5", Type: "custom_model"}}, err: `has no path`},
		{update: RemoveUpdate, arg: CatalogRemoval{Kind: KindModel, Name: "clf", Version: "3"}},
		{update: RemoveUpdate, arg: CatalogRemoval{Kind: KindModel, Name: "clf", Version: "3"},
			err: "no model \"clf\" version \"3\" is registered: list them with `porch model list`"},
	}, false)
	require.Len(t, cat.Data, 1, "a model and a data asset of the same name are two entries")
	require.Len(t, cat.Models, 2)
	latest, ok := cat.FindModel("clf", "")
	require.True(t, ok)
	assert.Equal(t, plan.Asset{Name: "clf", Version: "2", Type: "mlflow_model", Path: "/m/clf/2"}, latest)
}
