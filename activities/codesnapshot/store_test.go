package codesnapshot

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/porch-pipelines/porch/activities/objectstore"
	"github.com/porch-pipelines/porch/activities/objectstore/s3test"
	"github.com/porch-pipelines/porch/compiler/plan"
)

func openMinIO(t *testing.T) *objectstore.Store {
	t.Helper()
	endpoint, access, secret, bucket := s3test.Start(t)
	t.Setenv("AWS_ACCESS_KEY_ID", access)
	t.Setenv("AWS_SECRET_ACCESS_KEY", secret)
	s, err := objectstore.Open(plan.Datastore{Name: "lake", Type: plan.DatastoreS3, Endpoint: endpoint, Bucket: bucket, Prefix: "p"})
	require.NoError(t, err)
	return s
}

func TestConcurrentFetchesOfOneSnapshotFetchItOnce(t *testing.T) {
	s := openMinIO(t)
	ctx := context.Background()
	root := writeTree(t, map[string]string{"run.sh": "echo hi\n", "lib/a.py": "A = 1\n"})
	require.NoError(t, os.Chmod(filepath.Join(root, "run.sh"), 0o755))
	require.NoError(t, os.Symlink("lib/a.py", filepath.Join(root, "a.py")))
	require.NoError(t, os.Symlink("missing.py", filepath.Join(root, "gone.py")))
	tr, err := Scan(root, "")
	require.NoError(t, err)
	uploaded, err := UploadObjects(ctx, s, tr)
	require.NoError(t, err)
	require.True(t, uploaded)

	c := &Cache{Dir: t.TempDir()}
	var wg sync.WaitGroup
	var mu sync.Mutex
	fetches := 0
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			local, fetched, err := c.Fetch(ctx, s, tr.Hash, "src")
			assert.NoError(t, err)
			assert.Equal(t, filepath.Join(c.Dir, tr.Hash, "src"), local)
			mu.Lock()
			if fetched {
				fetches++
			}
			mu.Unlock()
		}()
	}
	wg.Wait()
	assert.Equal(t, 1, fetches, "one of the concurrent steps fetched the snapshot, the others used it")
	local := filepath.Join(c.Dir, tr.Hash, "src")
	assert.Equal(t, tr.Hash, hashOf(t, local), "the cached copy is the tree")
	info, err := os.Stat(filepath.Join(local, "run.sh"))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o755), info.Mode().Perm(), "the executable bit survives object storage")
	held, err := os.ReadFile(filepath.Join(local, "a.py"))
	require.NoError(t, err)
	assert.Equal(t, "A = 1\n", string(held), "a link is snapshotted as what it points to")
	target, err := os.Readlink(filepath.Join(local, "gone.py"))
	require.NoError(t, err)
	assert.Equal(t, "missing.py", target, "a link to nothing stays a link")
}

func TestFetchRefusesATamperedOrMissingSnapshot(t *testing.T) {
	s := openMinIO(t)
	ctx := context.Background()
	tr, err := Scan(writeTree(t, map[string]string{"a.txt": "original"}), "")
	require.NoError(t, err)
	_, err = UploadObjects(ctx, s, tr)
	require.NoError(t, err)
	require.NoError(t, s.Put(ctx, Path(tr.Hash)+"/src/a.txt", strings.NewReader("tampered"), 8))

	c := &Cache{Dir: t.TempDir()}
	_, _, err = c.Fetch(ctx, s, tr.Hash, "src")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "does not match its hash")
	assert.NoDirExists(t, filepath.Join(c.Dir, tr.Hash), "a bad copy never enters the cache")

	missing := strings.Repeat("0", 64)
	_, _, err = c.Fetch(ctx, s, missing, "src")
	assert.ErrorIs(t, err, ErrMissing)
}
