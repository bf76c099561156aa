package plan

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestLeavesDatastore(t *testing.T) {
	leaves := []string{"..", "../etc", "a/../../b", "a/..", "%2e%2e/etc", "%2E%2e/x", "a/%2e%2E", "%252e%252e/x",
		"..%2fetc", "a%2F..%2Fb", `..\etc`, `a\..\b`, "a/%2e%2e%5cb"}
	for _, p := range leaves {
		assert.True(t, LeavesDatastore(p), p)
	}
	inside := []string{"", "a/b", "a/./b", "a//b", "...", "a..b/c", "..a", "%2e", "a%20b", "100%", "%zz/.x"}
	for _, p := range inside {
		assert.False(t, LeavesDatastore(p), p)
	}
}

func TestSplitDatastoreURI(t *testing.T) {
	name, path, ok := SplitDatastoreURI("azureml://datastores/ds/paths/a/b/")
	assert.True(t, ok)
	assert.Equal(t, "ds", name)
	assert.Equal(t, "a/b/", path)
	name, path, ok = SplitDatastoreURI("azureml://datastores/ds/paths")
	assert.True(t, ok)
	assert.Equal(t, "ds", name)
	assert.Equal(t, "", path)
	for _, uri := range []string{"azureml://datastores//paths/x", "azureml://datastores/a/b/paths/x",
		"azureml://datastores/ds/x", "/abs", "file:///x", "azureml://subscriptions/s/datastores/d/paths/p"} {
		_, _, ok := SplitDatastoreURI(uri)
		assert.False(t, ok, uri)
	}
}

func TestValidDatastoreName(t *testing.T) {
	for _, n := range []string{"workspaceblobstore", "sample_store", "nfs-1", "a.b"} {
		assert.True(t, ValidDatastoreName(n), n)
	}
	for _, n := range []string{"", ".", "..", "...", "a/b", `a\b`, "%2e%2e", "a b", "${{x}}"} {
		assert.False(t, ValidDatastoreName(n), n)
	}
}
