package worker_test

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/api/enums/v1"

	"github.com/porch-pipelines/porch/activities/objectstore"
	"github.com/porch-pipelines/porch/activities/objectstore/lazyfs"
	"github.com/porch-pipelines/porch/activities/objectstore/s3test"
	"github.com/porch-pipelines/porch/compiler/plan"
	"github.com/porch-pipelines/porch/workflows"
)

// TestTwoWorkersShareDataOnlyThroughTheObjectStore runs a two-step pipeline
// whose steps run on two worker processes with separate porch homes: the
// second step can only read the first one's output from the S3 datastore.
func TestTwoWorkersShareDataOnlyThroughTheObjectStore(t *testing.T) {
	_, _, secret, bucket := s3test.Start(t)
	home := t.TempDir()
	w := startWorker(t, home) // workflows only: the steps run on computes one and two
	t.Cleanup(w.Stop)
	store := registerS3(t, bucket)

	homeOne, homeTwo := t.TempDir(), t.TempDir()
	startWorkerProcess(t, homeOne, "one", "node-one")
	startWorkerProcess(t, homeTwo, "two", "node-two")

	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "p.yml"), []byte(fmt.Sprintf(`type: pipeline
name: lake
settings:
  default_datastore: azureml:%s
jobs:
  make:
    compute: azureml:one
    command: >-
      mkdir -p ${{outputs.data}}/part && echo alpha > ${{outputs.data}}/a.txt &&
      echo beta > ${{outputs.data}}/part/b.txt && echo one > ${{outputs.report}}
    outputs:
      data:
        type: uri_folder
      report:
        type: uri_file
        path: azureml://datastores/%s/paths/reports/${{name}}.txt
  use:
    compute: azureml:two
    command: >-
      cat ${{inputs.data}}/a.txt ${{inputs.data}}/part/b.txt ${{inputs.report}} > ${{outputs.out}}/joined.txt
    inputs:
      data: ${{parent.jobs.make.outputs.data}}
      report: ${{parent.jobs.make.outputs.report}}
    outputs:
      out:
        type: uri_folder
`, store.Name, store.Name)), 0o644))
	h := &harness{t: t, home: home}
	runID, err := h.run(compile(t, filepath.Join(dir, "p.yml"), nil))
	require.NoError(t, err)

	s, err := objectstore.Open(*store)
	require.NoError(t, err)
	got := filepath.Join(t.TempDir(), "joined")
	_, err = s.Download(context.Background(), "azureml/"+runID+"/use/out", got)
	require.NoError(t, err)
	data, err := os.ReadFile(filepath.Join(got, "joined.txt"))
	require.NoError(t, err)
	assert.Equal(t, "alpha\nbeta\none\n", string(data), "the same output as on one machine")
	committed, err := s.Committed(context.Background(), "azureml/"+runID+"/make/data")
	require.NoError(t, err)
	assert.True(t, committed, "a folder output is committed after its upload")

	assert.NoDirExists(t, filepath.Join(homeTwo, "datastores", store.Name, "azureml", runID, "make"),
		"worker two never saw worker one's folders: the data came through the object store")
	assertInputsWereMounted(t, filepath.Join(homeTwo, "datastores", store.Name, "azureml", runID, "use"), homeTwo)
	assertSecretNowhere(t, secret, runID, home, homeOne, homeTwo)
}

// assertInputsWereMounted checks a step's log says its s3 inputs were
// mounted (ro_mount, the default) where this host can mount FUSE, or
// downloaded where it cannot, and that no mount is left under home.
func assertInputsWereMounted(t *testing.T, step, home string) {
	t.Helper()
	log, err := os.ReadFile(filepath.Join(step, "artifacts", "user_logs", "std_log.txt"))
	require.NoError(t, err)
	_, noFUSE := os.Stat("/dev/fuse")
	if noFUSE == nil && os.Geteuid() == 0 {
		assert.Contains(t, string(log), "is mounted read-only")
	} else {
		assert.Contains(t, string(log), "inputs on object storage are downloaded into the working folder")
	}
	points, err := lazyfs.Mounts()
	require.NoError(t, err)
	for _, p := range points {
		assert.False(t, strings.HasPrefix(p, home+"/"), "%s is still mounted after the run", p)
	}
}

// assertSecretNowhere checks the secret appears in no file under the homes
// (logs, artifacts) and no event of the run's workflows.
func assertSecretNowhere(t *testing.T, secret, runID string, homes ...string) {
	t.Helper()
	for _, home := range homes {
		require.NoError(t, filepath.WalkDir(home, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			data, err := os.ReadFile(p)
			if err == nil {
				assert.NotContains(t, string(data), secret, "the secret is in %s", p)
			}
			return nil
		}))
	}
	for _, wf := range runWorkflows(t, runID) {
		it := temporalClient.GetWorkflowHistory(context.Background(), wf, "", false, enums.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
		for it.HasNext() {
			ev, err := it.Next()
			require.NoError(t, err)
			assert.False(t, strings.Contains(ev.String(), secret), "the secret is in event %d of %s", ev.GetEventId(), wf)
		}
	}
}

// registerS3 registers an s3 datastore on bucket for the test's length,
// with the test MinIO's credentials in the environment (which worker
// processes inherit). The catalogue answers only once a worker runs
// porch's workflows.
func registerS3(t *testing.T, bucket string) *plan.Datastore {
	t.Helper()
	endpoint, access, secret, _ := s3test.Start(t)
	t.Setenv("AWS_ACCESS_KEY_ID", access)
	t.Setenv("AWS_SECRET_ACCESS_KEY", secret)
	store := &plan.Datastore{Name: "s3" + strconv.FormatInt(time.Now().UnixNano(), 36), Type: plan.DatastoreS3,
		Endpoint: endpoint, Bucket: bucket, Prefix: "porch"}
	_, err := workflows.RegisterCatalogEntry(context.Background(), temporalClient, workflows.CatalogEntry{Datastore: store})
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = workflows.RemoveCatalogEntry(context.Background(), temporalClient, workflows.CatalogRemoval{Kind: workflows.KindDatastore, Name: store.Name})
	})
	return store
}

// TestAnOutputCannotLeaveItsDatastoreThroughALink plants a symbolic link
// in the default datastore's folder to a folder outside it: a step whose
// output path goes through the link fails, saying so, and writes nothing
// there.
func TestAnOutputCannotLeaveItsDatastoreThroughALink(t *testing.T) {
	h := newHarness(t)
	outside := t.TempDir()
	ds := filepath.Join(h.home, "datastores", plan.DefaultDatastore)
	require.NoError(t, os.MkdirAll(ds, 0o755))
	require.NoError(t, os.Symlink(outside, filepath.Join(ds, "evil_link")))
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "p.yml"), []byte(`type: pipeline
jobs:
  escape:
    command: echo pwned > ${{outputs.out}}/owned.txt
    outputs:
      out:
        type: uri_folder
        path: azureml://datastores/workspaceblobstore/paths/evil_link/sub
`), 0o644))
	_, err := h.run(compile(t, filepath.Join(dir, "p.yml"), nil))
	require.Error(t, err)
	assert.Contains(t, workflows.ErrorMessage(err), "evil_link is a symbolic link to "+outside+", outside its datastore's folder")
	entries, err := os.ReadDir(outside)
	require.NoError(t, err)
	assert.Empty(t, entries, "nothing is written outside the datastore")
}
