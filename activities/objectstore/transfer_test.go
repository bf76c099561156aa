package objectstore

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/stretchr/testify/require"
)

// writeTree creates files (relative slash paths to contents) under a new
// folder and returns it.
func writeTree(t *testing.T, files map[string]string) string {
	dir := t.TempDir()
	for rel, body := range files {
		p := filepath.Join(dir, filepath.FromSlash(rel))
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(body), 0o644))
	}
	return dir
}

// readTree returns every file under dir, relative slash path to contents.
func readTree(t *testing.T, dir string) map[string]string {
	got := map[string]string{}
	require.NoError(t, filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		rel, _ := filepath.Rel(dir, p)
		got[filepath.ToSlash(rel)] = string(b)
		return err
	}))
	return got
}

// keys lists every object key in the store's bucket, sorted.
func keys(t *testing.T, s *Store) []string {
	var out []string
	for obj, err := range s.b.list(context.Background(), "", true, 0) {
		require.NoError(t, err)
		out = append(out, obj.key)
	}
	sort.Strings(out)
	return out
}

func TestSingleFileRoundTrip(t *testing.T) {
	eachStore(t, "ws", func(t *testing.T, s *Store) {
		ctx := context.Background()
		for name, body := range map[string]string{"model.pkl": "weights\x00\x01", "empty.txt": ""} {
			src := filepath.Join(writeTree(t, map[string]string{name: body}), name)
			n, err := s.Upload(ctx, src, "runs/r1/"+name)
			require.NoError(t, err)
			require.Equal(t, int64(len(body)), n)

			dst := filepath.Join(t.TempDir(), "in", "deep", name)
			single, err := s.Download(ctx, "runs/r1/"+name, dst)
			require.NoError(t, err)
			require.True(t, single)
			got, err := os.ReadFile(dst)
			require.NoError(t, err)
			require.Equal(t, body, string(got))
		}
		require.Equal(t, []string{"ws/runs/r1/empty.txt", "ws/runs/r1/model.pkl"}, keys(t, s))
	})
}

func TestFolderRoundTrip(t *testing.T) {
	eachStore(t, "ws/azureml", func(t *testing.T, s *Store) {
		ctx := context.Background()
		files := map[string]string{
			"a.txt":              "alpha",
			"empty":              "",
			"sub/b.csv":          "x,y\n1,2\n",
			"sub/deeper/c.bin":   "\x00\xff",
			"sub/deeper/d/e.txt": "e",
		}
		n, err := s.Upload(ctx, writeTree(t, files), "run/step/out")
		require.NoError(t, err)
		require.Equal(t, int64(5+0+8+2+1), n)
		ok, err := s.Committed(ctx, "run/step/out")
		require.NoError(t, err)
		require.True(t, ok)

		dst := filepath.Join(t.TempDir(), "out")
		single, err := s.Download(ctx, "/run/step/out/", dst)
		require.NoError(t, err)
		require.False(t, single)
		require.Equal(t, files, readTree(t, dst), "the marker is not downloaded, the layout is kept")

		// A sub-folder downloads on its own (it has no marker of its own).
		single, err = s.Download(ctx, "run/step/out/sub/deeper", filepath.Join(t.TempDir(), "deeper"))
		require.NoError(t, err)
		require.False(t, single)

		// An empty folder uploads as its marker alone and downloads as an empty folder.
		n, err = s.Upload(ctx, t.TempDir(), "run/step/nothing")
		require.NoError(t, err)
		require.Zero(t, n)
		empty := filepath.Join(t.TempDir(), "nothing")
		_, err = s.Download(ctx, "run/step/nothing", empty)
		require.NoError(t, err)
		require.Empty(t, readTree(t, empty))
		require.DirExists(t, empty)
	})
}

func TestDownloadMissing(t *testing.T) {
	eachStore(t, "ws", func(t *testing.T, s *Store) {
		_, err := s.Download(context.Background(), "run/nope", filepath.Join(t.TempDir(), "x"))
		require.ErrorContains(t, err, `datastore "lake" (`)
		require.ErrorContains(t, err, `no object or folder "run/nope": check the path`)
		var e *Error
		require.ErrorAs(t, err, &e)
		require.True(t, e.NotFound())
	})
}

func TestUploadReplacesAnEarlierAttempt(t *testing.T) {
	eachStore(t, "", func(t *testing.T, s *Store) {
		ctx := context.Background()
		_, err := s.Upload(ctx, writeTree(t, map[string]string{"old.txt": "old", "keep.txt": "v1", "sub/stale.txt": "s"}), "out")
		require.NoError(t, err)
		_, err = s.Upload(ctx, writeTree(t, map[string]string{"keep.txt": "v2", "new/n.txt": "n"}), "out")
		require.NoError(t, err)
		require.Equal(t, []string{"out/.porch-committed", "out/keep.txt", "out/new/n.txt"}, keys(t, s))

		dst := filepath.Join(t.TempDir(), "out")
		_, err = s.Download(ctx, "out", dst)
		require.NoError(t, err)
		require.Equal(t, map[string]string{"keep.txt": "v2", "new/n.txt": "n"}, readTree(t, dst))

		// A file where a folder was, and a folder where a file was.
		f := filepath.Join(writeTree(t, map[string]string{"f": "file"}), "f")
		_, err = s.Upload(ctx, f, "out")
		require.NoError(t, err)
		require.Equal(t, []string{"out"}, keys(t, s))
		_, err = s.Upload(ctx, writeTree(t, map[string]string{"g": "folder"}), "out")
		require.NoError(t, err)
		require.Equal(t, []string{"out/.porch-committed", "out/g"}, keys(t, s))
	})
}

func TestFailedUploadIsNotCommitted(t *testing.T) {
	eachStore(t, "ws", func(t *testing.T, s *Store) {
		ctx := context.Background()
		_, err := s.Upload(ctx, writeTree(t, map[string]string{"a.txt": "first attempt"}), "out")
		require.NoError(t, err)

		// The second attempt fails: b cannot be read, so none of its files
		// is sent. (Tests may run as root, who reads a chmod 000 file, so b
		// is a symbolic link to nothing.)
		src := writeTree(t, map[string]string{"a.txt": "second attempt", "c.txt": "never"})
		require.NoError(t, os.Symlink(filepath.Join(src, "missing"), filepath.Join(src, "b")))
		_, err = s.Upload(ctx, src, "out")
		require.ErrorContains(t, err, `upload "`+filepath.Join(src, "b")+`"`)
		ok, err := s.Committed(ctx, "out")
		require.NoError(t, err)
		require.False(t, ok, "the marker of the first attempt is gone and the second wrote none")
		require.Equal(t, []string{"ws/out/a.txt"}, keys(t, s))

		require.NoError(t, os.Remove(filepath.Join(src, "b")))
		_, err = s.Upload(ctx, src, "out")
		require.NoError(t, err)
		ok, err = s.Committed(ctx, "out")
		require.NoError(t, err)
		require.True(t, ok)
	})
}

func TestUploadRefusesWhatIsNotAFile(t *testing.T) {
	eachStore(t, "ws", func(t *testing.T, s *Store) {
		ctx := context.Background()
		_, err := s.Upload(ctx, filepath.Join(t.TempDir(), "absent"), "out")
		require.ErrorContains(t, err, "no such file or directory")

		src := writeTree(t, map[string]string{CommitMarker: "mine"})
		_, err = s.Upload(ctx, src, "out")
		require.ErrorContains(t, err, `a file named ".porch-committed" is porch's commit marker: rename it`)

		src = writeTree(t, map[string]string{"sub/x": "x"})
		require.NoError(t, os.Symlink(filepath.Join(src, "sub"), filepath.Join(src, "link")))
		_, err = s.Upload(ctx, src, "out")
		require.ErrorContains(t, err, "it is a folder behind a symbolic link, not a regular file")
	})
}

func TestCancelledTransfersStop(t *testing.T) {
	eachStore(t, "ws", func(t *testing.T, s *Store) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		src := writeTree(t, map[string]string{"a.txt": "a"})
		_, err := s.Upload(ctx, src, "out")
		require.ErrorIs(t, err, context.Canceled)
		_, err = s.Download(ctx, "out", filepath.Join(t.TempDir(), "out"))
		require.ErrorIs(t, err, context.Canceled)
		ok, err := s.Committed(context.Background(), "out")
		require.NoError(t, err)
		require.False(t, ok)
	})
}
