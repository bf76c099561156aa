package command

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/porch-pipelines/porch/activities/stepio"
	"github.com/porch-pipelines/porch/compiler/plan"
)

func TestRegisteredLocalDatastoresMapToTheirFolder(t *testing.T) {
	home, shared := t.TempDir(), t.TempDir()
	reads := 0
	a := &Activities{Host: &stepio.Host{Home: home, Datastores: func(context.Context) ([]plan.Datastore, error) {
		reads++
		return []plan.Datastore{
			{Name: "nfs", Type: plan.DatastoreLocal, Path: shared},
			{Name: "bucket", Type: plan.DatastoreS3, Bucket: "b"},
		}, nil
	}}}
	a.RefreshDatastores(context.Background())
	a.RefreshDatastores(context.Background())
	assert.Equal(t, 1, reads, "a fresh copy is not read again")

	p, err := a.LocalPath("azureml://datastores/nfs/paths/runs/x/")
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(shared, "runs", "x"), p)
	p, err = a.LocalPath("azureml://datastores/workspaceblobstore/paths/y")
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(home, "datastores", "workspaceblobstore", "y"), p, "an unregistered datastore is a folder under the home")
	_, err = a.LocalPath("azureml://datastores/nfs/paths/../etc")
	require.ErrorContains(t, err, "leaves its datastore")
	_, err = a.LocalPath("azureml://datastores/bucket/paths/z")
	require.ErrorContains(t, err, "datastore \"bucket\" is of type s3")
}

func TestACommandStepWritesItsOutputsToARegisteredLocalDatastore(t *testing.T) {
	home, shared := t.TempDir(), t.TempDir()
	a := &Activities{Host: &stepio.Host{Home: home, Datastores: func(context.Context) ([]plan.Datastore, error) {
		return []plan.Datastore{{Name: "nfs", Type: plan.DatastoreLocal, Path: shared}}, nil
	}}}
	in := RunCommandInput{Step: stepio.Step{
		RunID: "r1", StepPath: "write", DefaultDatastore: "nfs",
		Command: plan.Command{Template: plan.Template{Source: "echo hi > ${{outputs.out}}/hi.txt", Parts: []plan.Part{
			{Text: "echo hi > "}, {Ref: &plan.Ref{Kind: plan.RefOutput, Name: "out"}}, {Text: "/hi.txt"},
		}}},
		Outputs: []plan.Output{{Name: "out", Type: "uri_folder", Path: plan.DefaultOutputURI("nfs", "r1", "write", "out")}},
	}}
	_, err := a.RunCommand(context.Background(), in)
	require.NoError(t, err)
	data, err := os.ReadFile(filepath.Join(shared, "azureml", "r1", "write", "out", "hi.txt"))
	require.NoError(t, err)
	assert.Equal(t, "hi\n", string(data))
	assert.FileExists(t, filepath.Join(shared, "azureml", "r1", "write", "artifacts", "user_logs", "std_log.txt"), "the step's artifacts land in the datastore too")
}
