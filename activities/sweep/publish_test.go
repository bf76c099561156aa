package sweep

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"

	"github.com/porch-pipelines/porch/activities/objectstore"
	"github.com/porch-pipelines/porch/activities/objectstore/s3test"
	"github.com/porch-pipelines/porch/activities/stepio"
	"github.com/porch-pipelines/porch/compiler/plan"
)

func TestMain(m *testing.M) { os.Exit(s3test.Main(m)) }

// writeTree writes files (slash paths relative to dir) with their contents.
func writeTree(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, body := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(body), 0o644))
	}
}

// readTree reads every file under dir, by slash path.
func readTree(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	require.NoError(t, filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		rel, _ := filepath.Rel(dir, p)
		out[filepath.ToSlash(rel)] = string(b)
		return err
	}))
	return out
}

const trialModel = "azureml://datastores/ws/paths/azureml/r/tune/trial-1/model/"

func TestPublishSweepOutputsOnALocalDatastore(t *testing.T) {
	home := t.TempDir()
	a := &Activities{Host: &stepio.Host{Home: home}}
	ds := filepath.Join(home, "datastores", "ws")
	writeTree(t, filepath.Join(ds, "azureml/r/tune/trial-1/model"), map[string]string{"w.bin": "weights", "sub/cfg.json": "{}"})
	writeTree(t, filepath.Join(ds, "azureml/r/tune/trial-1"), map[string]string{"score.txt": "0.9"})
	writeTree(t, filepath.Join(ds, "best/r"), map[string]string{"stale.txt": "from an earlier run"})

	err := a.PublishSweepOutputs(context.Background(), PublishSweepOutputsInput{StepPath: "tune", Trial: 1, Outputs: []OutputCopy{
		{Name: "model", From: trialModel, To: "azureml://datastores/ws/paths/best/r/"},
		{Name: "score", From: "azureml://datastores/ws/paths/azureml/r/tune/trial-1/score.txt", To: "azureml://datastores/ws/paths/best/score.txt"},
		{Name: "empty", From: "azureml://datastores/ws/paths/azureml/r/tune/trial-1/none/", To: "azureml://datastores/ws/paths/best/none/"},
	}})
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"w.bin": "weights", "sub/cfg.json": "{}"}, readTree(t, filepath.Join(ds, "best/r")),
		"the folder holds exactly the best trial's output")
	b, err := os.ReadFile(filepath.Join(ds, "best/score.txt"))
	require.NoError(t, err)
	assert.Equal(t, "0.9", string(b), "a uri_file output is copied as the file")
	assert.NoDirExists(t, filepath.Join(ds, "best/none"), "an output the trial left empty is not copied")
	assert.Equal(t, map[string]string{"w.bin": "weights", "sub/cfg.json": "{}"}, readTree(t, filepath.Join(ds, "azureml/r/tune/trial-1/model")),
		"the trial keeps its own")
	entries, err := os.ReadDir(filepath.Join(ds, "best"))
	require.NoError(t, err)
	assert.Len(t, entries, 2, "no temporary folder is left: %v", entries)
}

func TestPublishSweepOutputsRefusesAPathInsideTheTrial(t *testing.T) {
	a := &Activities{Host: &stepio.Host{Home: t.TempDir()}}
	err := a.PublishSweepOutputs(context.Background(), PublishSweepOutputsInput{StepPath: "tune", Trial: 1, Outputs: []OutputCopy{
		{Name: "model", From: trialModel, To: trialModel + "best/"},
	}})
	var ae *temporal.ApplicationError
	require.True(t, errors.As(err, &ae), "%v", err)
	assert.True(t, ae.NonRetryable())
	assert.Contains(t, ae.Error(), `step "tune": copy output "model" of the best trial (1)`)
	assert.Contains(t, ae.Error(), "one holds the other")
}

// TestPublishSweepOutputsOnS3 copies a trial's output from a local
// datastore to an s3 one and back: the s3 copy is committed.
func TestPublishSweepOutputsOnS3(t *testing.T) {
	endpoint, access, secret, bucket := s3test.Start(t)
	t.Setenv("AWS_ACCESS_KEY_ID", access)
	t.Setenv("AWS_SECRET_ACCESS_KEY", secret)
	d := plan.Datastore{Name: "lake", Type: plan.DatastoreS3, Endpoint: endpoint, Bucket: bucket, Prefix: "p"}
	home := t.TempDir()
	a := &Activities{Host: &stepio.Host{Home: home, Datastores: func(context.Context) ([]plan.Datastore, error) {
		return []plan.Datastore{d}, nil
	}}}
	ctx := context.Background()
	writeTree(t, filepath.Join(home, "datastores", "ws", "azureml/r/tune/trial-1/model"), map[string]string{"w.bin": "weights", "sub/cfg.json": "{}"})

	require.NoError(t, a.PublishSweepOutputs(ctx, PublishSweepOutputsInput{StepPath: "tune", Trial: 1, Outputs: []OutputCopy{
		{Name: "model", From: trialModel, To: "azureml://datastores/lake/paths/best/r/"},
	}}))
	s, err := objectstore.Open(d)
	require.NoError(t, err)
	objs, err := s.List(ctx, "best/r")
	require.NoError(t, err)
	for i := range objs {
		assert.NotEmpty(t, objs[i].ETag, "%s has the store's ETag", objs[i].Path)
		objs[i].ETag = ""
	}
	assert.Equal(t, []objectstore.Object{{Path: "sub/cfg.json", Size: 2}, {Path: "w.bin", Size: 7}}, objs)
	assert.NoError(t, s.GetFile(ctx, "best/r/"+objectstore.CommitMarker, filepath.Join(t.TempDir(), "marker")), "the folder is committed")

	require.NoError(t, a.PublishSweepOutputs(ctx, PublishSweepOutputsInput{StepPath: "tune", Trial: 1, Outputs: []OutputCopy{
		{Name: "model", From: "azureml://datastores/lake/paths/best/r/", To: "azureml://datastores/ws/paths/back/"},
	}}))
	assert.Equal(t, map[string]string{"w.bin": "weights", "sub/cfg.json": "{}"}, readTree(t, filepath.Join(home, "datastores", "ws", "back")))
	entries, _ := os.ReadDir(filepath.Join(home, "tmp"))
	assert.Empty(t, entries, "the download is removed")
}
