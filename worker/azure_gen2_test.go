package worker_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blockblob"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/porch-pipelines/porch/activities/objectstore"
	"github.com/porch-pipelines/porch/activities/objectstore/azuritetest"
	"github.com/porch-pipelines/porch/compiler/plan"
	"github.com/porch-pipelines/porch/workflows"
)

// TestAzureDataLakeGen2InEveryModeWithRWMountAndUploadOutputs runs, on
// a worker whose connection string gives only a DfsEndpoint (Azurite's),
// a step per input mode reading an abfss:// folder and a path of a
// registered azure_data_lake_gen2 datastore (a file system holding
// directories as a hierarchical-namespace account shows them through the
// blob API), each writing an rw_mount and an upload output to that
// datastore: both are published when the step succeeds, as on s3 (porch
// stages an rw_mount output and uploads it, as upload). A step that writes
// its rw_mount output and fails publishes nothing.
func TestAzureDataLakeGen2InEveryModeWithRWMountAndUploadOutputs(t *testing.T) {
	srv, fsName := azureContainer(t)
	t.Setenv(objectstore.EnvConnectionString, "DefaultEndpointsProtocol=http;AccountName="+azuritetest.Account+
		";AccountKey="+azuritetest.Key+";DfsEndpoint="+srv.Endpoint(azuritetest.Account)+";")
	h := newHarness(t)
	lake := &plan.Datastore{Name: "lake" + strconv.FormatInt(time.Now().UnixNano(), 36), Type: plan.DatastoreAzureDataLakeGen2,
		AccountName: azuritetest.Account, Filesystem: fsName}
	_, err := workflows.RegisterCatalogEntry(context.Background(), temporalClient, workflows.CatalogEntry{Datastore: lake})
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = workflows.RemoveCatalogEntry(context.Background(), temporalClient, workflows.CatalogRemoval{Kind: workflows.KindDatastore, Name: lake.Name})
	})
	c, err := srv.Container(azuritetest.Account, fsName)
	require.NoError(t, err)
	for _, dir := range []string{"in", "in/sub"} {
		_, err := c.NewBlockBlobClient(dir).UploadBuffer(context.Background(), nil,
			&blockblob.UploadBufferOptions{Metadata: map[string]*string{"hdi_isfolder": to.Ptr("true")}})
		require.NoError(t, err)
	}
	s, err := objectstore.Open(*lake)
	require.NoError(t, err)
	upload(t, s, map[string]string{"in/a.txt": "a\n", "in/sub/b.txt": "b\n"})

	abfss := fmt.Sprintf("abfss://%s@%s.dfs.core.windows.net/in", fsName, azuritetest.Account)
	var jobs strings.Builder
	for _, mode := range []string{"ro_mount", "download"} {
		fmt.Fprintf(&jobs, `  read_%[1]s:
    command: cat ${{inputs.folder}}/a.txt ${{inputs.folder}}/sub/b.txt ${{inputs.file}} > ${{outputs.rw}}/got.txt && ls ${{inputs.folder}} > ${{outputs.up}}/listing.txt
    inputs:
      folder: {type: uri_folder, path: %[2]q, mode: %[1]s}
      file: {type: uri_file, path: "azureml://datastores/%[3]s/paths/in/sub/b.txt", mode: %[1]s}
    outputs:
      rw: {type: uri_folder, mode: rw_mount}
      up: {type: uri_folder, mode: upload}
`, mode, abfss, lake.Name)
	}
	jobs.WriteString(`  fails:
    command: echo partial > ${{outputs.rw}}/half.txt && exit 3
    outputs:
      rw: {type: uri_folder, mode: rw_mount}
`)
	path := writePipeline(t, "type: pipeline\nsettings:\n  default_datastore: azureml:"+lake.Name+
		"\n  continue_on_step_failure: true\njobs:\n"+jobs.String())
	runID, err := h.run(compile(t, path, nil))
	require.Error(t, err, "the step fails runs")

	all := steps(t, runID)
	for _, step := range []string{"read_ro_mount", "read_download"} {
		require.Equal(t, workflows.StatusSucceeded, all[step].Status, "%s: %s", step, all[step].Error)
		out := "azureml/" + runID + "/" + step
		assert.Equal(t, "a\nb\nb\n", readObject(t, s, out+"/rw/got.txt"), step)
		assert.Equal(t, "a.txt\nsub\n", readObject(t, s, out+"/up/listing.txt"), "%s: the directory is a folder, listed once", step)
		for _, o := range []string{"rw", "up"} {
			committed, err := s.Committed(context.Background(), out+"/"+o)
			require.NoError(t, err)
			assert.True(t, committed, "%s's %s output is committed", step, o)
		}
	}
	assert.Equal(t, workflows.StatusFailed, all["fails"].Status)
	objs, err := s.List(context.Background(), "azureml/"+runID+"/fails/rw")
	require.NoError(t, err)
	assert.Empty(t, objs, "a failed step's rw_mount output is not published")
	committed, err := s.Committed(context.Background(), "azureml/"+runID+"/fails/rw")
	require.NoError(t, err)
	assert.False(t, committed)
}
