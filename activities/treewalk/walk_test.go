package treewalk

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func write(t *testing.T, p, content string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
	require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
}

// walked lists what Walk reaches: "rel" for a file, "rel/" for a
// folder, "rel -> target" for a dangling link.
func walked(t *testing.T, root string) []string {
	t.Helper()
	return walkedBy(t, Walk, root)
}

func walkedBy(t *testing.T, walk func(string, func(Visit) error) error, root string) []string {
	t.Helper()
	var out []string
	require.NoError(t, walk(root, func(v Visit) error {
		switch {
		case v.Info == nil:
			out = append(out, v.Rel+" -> "+v.Link)
		case v.IsDir():
			out = append(out, v.Rel+"/")
		default:
			out = append(out, v.Rel)
		}
		return nil
	}))
	return out
}

func TestWalkFollowsLinksToFilesAndFolders(t *testing.T) {
	outside := t.TempDir()
	write(t, filepath.Join(outside, "lib", "util.py"), "x = 1\n")
	write(t, filepath.Join(outside, "data.csv"), "a\n")
	root := t.TempDir()
	write(t, filepath.Join(root, "b.txt"), "b")
	require.NoError(t, os.Symlink(filepath.Join(outside, "lib"), filepath.Join(root, "lib")))
	require.NoError(t, os.Symlink(filepath.Join(outside, "data.csv"), filepath.Join(root, "a.csv")))
	require.NoError(t, os.Symlink("nowhere", filepath.Join(root, "c")))

	assert.Equal(t, []string{"/", "a.csv", "b.txt", "c -> nowhere", "lib/", "lib/util.py"}, walked(t, root))

	link := filepath.Join(t.TempDir(), "root-link")
	require.NoError(t, os.Symlink(root, link))
	assert.Equal(t, walked(t, root), walked(t, link), "a root that is a link stands for its target")
	assert.Equal(t, []string{"/", "a.csv -> " + filepath.Join(outside, "data.csv"), "b.txt", "c -> nowhere", "lib -> " + filepath.Join(outside, "lib")},
		walkedBy(t, WalkLinks, root), "WalkLinks reports links as links")
}

func TestWalkRefusesLoops(t *testing.T) {
	root := t.TempDir()
	write(t, filepath.Join(root, "sub", "f"), "f")
	require.NoError(t, os.Symlink("..", filepath.Join(root, "sub", "up")))
	err := Walk(root, func(Visit) error { return nil })
	require.ErrorIs(t, err, ErrLoop)
	assert.Contains(t, err.Error(), filepath.Join(root, "sub", "up"))

	self := t.TempDir()
	require.NoError(t, os.Symlink("me", filepath.Join(self, "me")))
	assert.ErrorIs(t, Walk(self, func(Visit) error { return nil }), ErrLoop)
}

func TestWalkSkipsFoldersAndReportsAMissingRoot(t *testing.T) {
	root := t.TempDir()
	write(t, filepath.Join(root, "skip", "f"), "f")
	write(t, filepath.Join(root, "z"), "z")
	var seen []string
	require.NoError(t, Walk(root, func(v Visit) error {
		seen = append(seen, v.Rel)
		if v.Rel == "skip" {
			return fs.SkipDir
		}
		return nil
	}))
	assert.Equal(t, []string{"", "skip", "z"}, seen)
	err := Walk(filepath.Join(root, "absent"), func(Visit) error { return nil })
	assert.True(t, errors.Is(err, fs.ErrNotExist))
}
