package objectstore

import (
	"bytes"
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestFSIsAFileSystem checks the datastore's fs.FS against the standard
// library's conformance test, on a committed folder with nested files.
func TestFSIsAFileSystem(t *testing.T) {
	s := openMinIO(t, "root")
	src := t.TempDir()
	for name, body := range map[string]string{"a.txt": "alpha", "sub/b.csv": "x,y\n1,2\n", "sub/deep/c.txt": "c", "a.txt.bak": "z"} {
		require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(src, name)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(src, name), []byte(body), 0o644))
	}
	ctx := context.Background()
	_, err := s.Upload(ctx, src, "data/in")
	require.NoError(t, err)
	fsys := s.FS(ctx)
	require.NoError(t, fstest.TestFS(fsys, "data/in/a.txt", "data/in/sub/b.csv", "data/in/sub/deep/c.txt", "data/in/a.txt.bak"))

	entries, err := fs.ReadDir(fsys, "data/in")
	require.NoError(t, err)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	assert.Equal(t, []string{"a.txt", "a.txt.bak", "sub"}, names, "sorted, commit marker left out")
	data, err := fs.ReadFile(fsys, "data/in/sub/b.csv")
	require.NoError(t, err)
	assert.Equal(t, "x,y\n1,2\n", string(data))
	_, err = fs.Stat(fsys, "data/nothing")
	assert.ErrorIs(t, err, fs.ErrNotExist)

	var part bytes.Buffer
	n, err := s.GetRange(ctx, "data/in/sub/b.csv", 4, 4, &part)
	require.NoError(t, err)
	assert.Equal(t, int64(4), n)
	assert.Equal(t, "1,2\n", part.String())

	objs, err := s.List(ctx, "data/in")
	require.NoError(t, err)
	assert.Len(t, objs, 4)
	require.NoError(t, s.RemoveAll(ctx, "data/in/sub"))
	objs, err = s.List(ctx, "data/in")
	require.NoError(t, err)
	for _, o := range objs {
		assert.False(t, strings.HasPrefix(o.Path, "sub/"), o.Path)
	}
	committed, err := s.Committed(ctx, "data/in")
	require.NoError(t, err)
	assert.True(t, committed)
}
