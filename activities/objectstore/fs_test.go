package objectstore

import (
	"bytes"
	"context"
	"io"
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
	eachStore(t, "root", func(t *testing.T, s *Store) {
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
	})
}

// TestFSStatAndReadDir pins what lazyfs mounts show: sizes, folders,
// sorted names without the commit marker, and missing paths as the store's
// NotFound error naming the path.
func TestFSStatAndReadDir(t *testing.T) {
	eachStore(t, "data", func(t *testing.T, s *Store) {
		ctx := context.Background()
		src := t.TempDir()
		require.NoError(t, os.MkdirAll(filepath.Join(src, "sub"), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(src, "a.txt"), []byte("0123456789"), 0o644))
		require.NoError(t, os.WriteFile(filepath.Join(src, "sub", "b.txt"), []byte("b"), 0o644))
		_, err := s.Upload(ctx, src, "in")
		require.NoError(t, err)
		fsys := s.FS(ctx)

		entries, err := fs.ReadDir(fsys, "in")
		require.NoError(t, err)
		require.Len(t, entries, 2, "the commit marker is left out: %v", entries)
		a, err := entries[0].Info()
		require.NoError(t, err)
		assert.Equal(t, "a.txt", a.Name())
		assert.Equal(t, int64(10), a.Size())
		assert.False(t, a.IsDir())
		assert.Equal(t, "sub", entries[1].Name())
		assert.True(t, entries[1].IsDir())

		info, err := fs.Stat(fsys, "in/a.txt")
		require.NoError(t, err)
		assert.Equal(t, "a.txt", info.Name())
		assert.Equal(t, int64(10), info.Size())
		info, err = fs.Stat(fsys, "in")
		require.NoError(t, err)
		assert.True(t, info.IsDir(), "a key prefix is a folder")

		for _, missing := range []func() error{
			func() error { _, err := fs.Stat(fsys, "absent"); return err },
			func() error { _, err := fs.ReadDir(fsys, "absent"); return err },
		} {
			err := missing()
			assert.ErrorIs(t, err, fs.ErrNotExist)
			var serr *Error
			require.ErrorAs(t, err, &serr)
			assert.True(t, serr.NotFound())
			assert.ErrorContains(t, err, `datastore "lake"`)
			assert.ErrorContains(t, err, `no object or folder "absent"`)
		}
		_, err = fs.ReadDir(fsys, "in/a.txt")
		require.Error(t, err, "an object is no folder")
		assert.NotErrorIs(t, err, fs.ErrNotExist)

		def := s.def
		def.Prefix = "/data/./"
		messy, err := Open(def)
		require.NoError(t, err)
		info, err = fs.Stat(messy.FS(ctx), "in/a.txt")
		require.NoError(t, err, "FS cleans the prefix as Key does")
		assert.Equal(t, int64(10), info.Size())
	})
}

// TestGetRange reads only the bytes asked for, and a range past the end of
// the object is an error, never a silently short read.
func TestGetRange(t *testing.T) {
	eachStore(t, "data", func(t *testing.T, s *Store) {
		ctx := context.Background()
		require.NoError(t, s.Put(ctx, "in/a.txt", strings.NewReader("0123456789"), 10))

		var part bytes.Buffer
		n, err := s.GetRange(ctx, "in/a.txt", 3, 4, &part)
		require.NoError(t, err)
		assert.Equal(t, int64(4), n)
		assert.Equal(t, "3456", part.String())

		part.Reset()
		n, err = s.GetRange(ctx, "in/a.txt", 8, 4, &part)
		assert.ErrorIs(t, err, io.ErrUnexpectedEOF, "a range over the end")
		assert.Equal(t, int64(2), n)
		assert.Equal(t, "89", part.String())
		_, err = s.GetRange(ctx, "in/a.txt", 10, 4, io.Discard)
		require.Error(t, err, "a range at the end")
		assert.ErrorContains(t, err, `read bytes 10-13 of "in/a.txt"`)
		n, err = s.GetRange(ctx, "in/a.txt", 10, 0, io.Discard)
		require.NoError(t, err, "nothing asked, nothing read")
		assert.Zero(t, n)
	})
}
