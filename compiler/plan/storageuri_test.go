package plan

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseStorageURI(t *testing.T) {
	for in, want := range map[string]StorageURI{
		"wasbs://datasets@azuremlexamples.blob.core.windows.net/iris.csv": {URL: "wasbs://datasets@azuremlexamples.blob.core.windows.net/iris.csv",
			Account: "azuremlexamples", Container: "datasets", Path: "iris.csv", Endpoint: "core.windows.net", Protocol: "https"},
		"wasb://c@acct.blob.core.chinacloudapi.cn/a/b/": {URL: "wasb://c@acct.blob.core.chinacloudapi.cn/a/b/",
			Account: "acct", Container: "c", Path: "a/b", Endpoint: "core.chinacloudapi.cn", Protocol: "http"},
		"abfss://fs@lake.dfs.core.windows.net/raw/x%20y.csv": {URL: "abfss://fs@lake.dfs.core.windows.net/raw/x%20y.csv",
			Account: "lake", Container: "fs", Path: "raw/x y.csv", Gen2: true, Endpoint: "core.windows.net", Protocol: "https"},
		"https://dprepdata.blob.core.windows.net/demo/Titanic.csv": {URL: "https://dprepdata.blob.core.windows.net/demo/Titanic.csv",
			Account: "dprepdata", Container: "demo", Path: "Titanic.csv", Endpoint: "core.windows.net", Protocol: "https"},
		"https://www.robots.ox.ac.uk/~vgg/data/pets/data/images.tar.gz": {Web: true, URL: "https://www.robots.ox.ac.uk/~vgg/data/pets/data/images.tar.gz"},
		"http://127.0.0.1:8080/iris.csv": {Web: true, URL: "http://127.0.0.1:8080/iris.csv"},
	} {
		got, ok, err := ParseStorageURI(in)
		require.NoError(t, err, in)
		require.True(t, ok, in)
		assert.Equal(t, want, got, in)
	}
	for _, in := range []string{"azureml://datastores/x/paths/y", "./data", "s3://b/k", "file:///x"} {
		_, ok, err := ParseStorageURI(in)
		assert.NoError(t, err, in)
		assert.False(t, ok, in)
	}
	_, _, err := ParseStorageURI("wasbs://acct.blob.core.windows.net/c/x")
	assert.EqualError(t, err, `"wasbs://acct.blob.core.windows.net/c/x" is not a wasbs:// URI: expected wasbs://CONTAINER@ACCOUNT.blob.core.windows.net/PATH`)
	d := StorageURI{Account: "lake", Container: "fs", Gen2: true, Endpoint: "core.windows.net", Protocol: "https"}.Datastore()
	assert.Equal(t, Datastore{Type: DatastoreAzureDataLakeGen2, AccountName: "lake", Filesystem: "fs"}, d)
}
