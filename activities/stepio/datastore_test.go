package stepio

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestLocalPath(t *testing.T) {
	const home = "/home/u/.porch"
	ok := []struct{ uri, want string }{
		{"azureml://datastores/workspaceblobstore/paths/azureml/run1/train/model/", home + "/datastores/workspaceblobstore/azureml/run1/train/model"},
		{"azureml://datastores/workspaceblobstore/paths/azureml/run1/train/model", home + "/datastores/workspaceblobstore/azureml/run1/train/model"},
		{"azureml://datastores/ds/paths/data/iris.csv", home + "/datastores/ds/data/iris.csv"},
		{"azureml://datastores/ds/paths/", home + "/datastores/ds"},
		{"azureml://datastores/ds/paths", home + "/datastores/ds"},
		{"azureml://datastores/ds/paths/a//b/./c", home + "/datastores/ds/a/b/c"},
		{"file:///data/train", "/data/train"},
		{"file:///data/train/", "/data/train"},
		{"file://localhost/data/my%20file.csv", "/data/my file.csv"},
		{"/data/train/", "/data/train"},
		{"/data/x.csv", "/data/x.csv"},
	}
	for _, c := range ok {
		got, err := LocalPath(home, c.uri)
		require.NoError(t, err, c.uri)
		assert.Equal(t, c.want, got, c.uri)
	}

	bad := []struct{ uri, want string }{
		{"https://example.com/iris.csv", `porch reads only local and datastore paths, not https:// URIs; download "https://example.com/iris.csv" first`},
		{"wasbs://c@acct.blob.core.windows.net/x", "not wasbs:// URIs"},
		{"s3://bucket/key", "not s3:// URIs"},
		{"azureml:iris:1", `porch reads only local and datastore paths, not "azureml:iris:1"`},
		{"azureml://subscriptions/s/resourcegroups/r/workspaces/w/datastores/d/paths/p", "porch maps only azureml://datastores/<name>/paths/<path>"},
		{"azureml://datastores/ds/data/x", "is malformed: expected azureml://datastores/<name>/paths/<path>"},
		{"azureml://datastores//paths/x", "is malformed"},
		{"azureml://datastores/ds/paths/../../etc", `leaves its datastore with ".."`},
		{"azureml://datastores/ds/paths/%2e%2e/%2E%2e/etc", `leaves its datastore with ".."`},
		{"azureml://datastores/ds/paths/a/..%2F..%2F..%2Fetc", `leaves its datastore with ".."`},
		{"azureml://datastores/%2e%2e/paths/etc", `names datastore "%2e%2e"`},
		{"file://otherhost/data", `names host "otherhost"`},
		{"data/train", "is relative"},
		{"./data", "is relative"},
		{"", "empty data path"},
	}
	for _, c := range bad {
		_, err := LocalPath(home, c.uri)
		require.Error(t, err, c.uri)
		assert.Contains(t, err.Error(), c.want, c.uri)
	}
}

func TestLocalPathNeedsHomeForDatastores(t *testing.T) {
	_, err := LocalPath("", "azureml://datastores/ds/paths/x")
	assert.ErrorContains(t, err, "porch home folder is not set")
	got, err := LocalPath("", "/abs")
	require.NoError(t, err)
	assert.Equal(t, "/abs", got)
}

func TestStepArtifactsURI(t *testing.T) {
	assert.Equal(t, "azureml://datastores/ds/paths/azureml/run1/sub/train/artifacts/", StepArtifactsURI("ds", "run1", "sub/train"))
	got, err := LocalPath("/h", StepArtifactsURI("ds", "run1", "sub/train"))
	require.NoError(t, err)
	assert.Equal(t, "/h/datastores/ds/azureml/run1/sub/train/artifacts", got)
}
