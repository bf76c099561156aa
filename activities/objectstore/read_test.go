package objectstore

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestStatReadDirAndReadAt(t *testing.T) {
	s := openMinIO(t, "data")
	ctx := context.Background()
	src := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(src, "sub"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(src, "a.txt"), []byte("0123456789"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(src, "sub", "b.txt"), []byte("b"), 0o644))
	_, err := s.Upload(ctx, src, "in")
	require.NoError(t, err)

	objs, err := s.ReadDir(ctx, "in")
	require.NoError(t, err)
	require.Len(t, objs, 2, "the commit marker is left out: %+v", objs)
	assert.Equal(t, "a.txt", objs[0].Name)
	assert.Equal(t, int64(10), objs[0].Size)
	assert.False(t, objs[0].Dir)
	assert.Equal(t, Entry{Name: "sub", Dir: true}, objs[1])

	obj, err := s.Stat(ctx, "in/a.txt")
	require.NoError(t, err)
	assert.Equal(t, "a.txt", obj.Name)
	assert.Equal(t, int64(10), obj.Size)
	_, err = s.Stat(ctx, "in")
	var serr *Error
	require.ErrorAs(t, err, &serr)
	assert.True(t, serr.NotFound(), "a folder is no object")
	_, err = s.ReadDir(ctx, "absent")
	require.ErrorAs(t, err, &serr)
	assert.True(t, serr.NotFound())

	buf := make([]byte, 4)
	n, err := s.ReadAt(ctx, "in/a.txt", buf, 3)
	require.NoError(t, err)
	assert.Equal(t, "3456", string(buf[:n]))
	n, err = s.ReadAt(ctx, "in/a.txt", buf, 8)
	assert.True(t, errors.Is(err, io.EOF), "a read over the end: %v", err)
	assert.Equal(t, "89", string(buf[:n]))
	n, err = s.ReadAt(ctx, "in/a.txt", buf, 10)
	assert.True(t, errors.Is(err, io.EOF), "a read at the end: %v", err)
	assert.Zero(t, n)
}
