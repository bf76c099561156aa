package objectstore

import (
	"context"
	"io/fs"
	"path/filepath"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blockblob"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/porch-pipelines/porch/activities/objectstore/azuritetest"
	"github.com/porch-pipelines/porch/compiler/plan"
)

// TestADLSGen2ThroughTheBlobAPI opens an azure_data_lake_gen2 datastore
// whose connection string gives only a DfsEndpoint (Azurite's: it has no
// dfs service, and porch reaches Gen2 through the blob API at the same
// address), on a file system holding what a hierarchical-namespace
// account shows through the blob API: directories as empty blobs marked
// hdi_isfolder=true beside the files. Directories are folders, never
// files: a download makes them folders, a listing shows each once, an
// empty one included.
func TestADLSGen2ThroughTheBlobAPI(t *testing.T) {
	srv, fsName := azuritetest.Start(t, azuritetest.Account)
	noAzureCredentials(t)
	t.Setenv(EnvConnectionString, "DefaultEndpointsProtocol=http;AccountName="+azuritetest.Account+";AccountKey="+azuritetest.Key+
		";DfsEndpoint="+srv.Endpoint(azuritetest.Account)+";")
	s, err := Open(plan.Datastore{Name: "lake", Type: plan.DatastoreAzureDataLakeGen2, AccountName: azuritetest.Account, Filesystem: fsName})
	require.NoError(t, err)
	c, err := srv.Container(azuritetest.Account, fsName)
	require.NoError(t, err)
	ctx := context.Background()
	for _, dir := range []string{"data", "data/sub", "data/empty"} {
		_, err := c.NewBlockBlobClient(dir).UploadBuffer(ctx, nil, &blockblob.UploadBufferOptions{Metadata: map[string]*string{"hdi_isfolder": to.Ptr("true")}})
		require.NoError(t, err)
	}
	upload := func(p, body string) {
		_, err := s.Upload(ctx, filepath.Join(writeTree(t, map[string]string{"f": body}), "f"), p)
		require.NoError(t, err)
	}
	upload("data/a.txt", "alpha")
	upload("data/sub/b.txt", "beta")

	dst := filepath.Join(t.TempDir(), "data")
	single, err := s.Download(ctx, "data", dst)
	require.NoError(t, err)
	assert.False(t, single, "a directory is a folder")
	assert.Equal(t, map[string]string{"a.txt": "alpha", "sub/b.txt": "beta"}, readTree(t, dst))
	assert.DirExists(t, filepath.Join(dst, "empty"), "an empty directory is an empty folder")

	fsys := s.FS(ctx)
	entries, err := fs.ReadDir(fsys, "data")
	require.NoError(t, err)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
		if e.Name() != "a.txt" {
			assert.True(t, e.IsDir(), e.Name())
		}
	}
	assert.Equal(t, []string{"a.txt", "empty", "sub"}, names, "each directory once")
	for _, dir := range []string{"data", "data/sub", "data/empty"} {
		info, err := fs.Stat(fsys, dir)
		require.NoError(t, err, dir)
		assert.True(t, info.IsDir(), dir)
	}
	b, err := fs.ReadFile(fsys, "data/sub/b.txt")
	require.NoError(t, err)
	assert.Equal(t, "beta", string(b))

	uri, err := s.URI("data/a.txt")
	require.NoError(t, err)
	assert.Equal(t, srv.Endpoint(azuritetest.Account)+"/"+fsName+"/data/a.txt", uri, "reached at the blob endpoint")
}
