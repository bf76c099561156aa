package reuse

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// writeOld writes a file and dates it back past the racy window, so its
// hash is kept.
func writeOld(t *testing.T, p, content string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
	require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
	old := time.Now().Add(-time.Hour)
	require.NoError(t, os.Chtimes(p, old, old))
}

func TestHasherTreeHashesContentAndPaths(t *testing.T) {
	dir := t.TempDir()
	writeOld(t, filepath.Join(dir, "a.txt"), "one")
	writeOld(t, filepath.Join(dir, "sub", "b.txt"), "two")
	h := &Hasher{Dir: t.TempDir()}
	sum, files, err := h.Tree(dir)
	require.NoError(t, err)
	assert.Equal(t, []string{"a.txt", "sub/b.txt"}, []string{files[0].Path, files[1].Path})
	assert.Equal(t, hashOf("one"), files[0].Hash, "a file hashes as its content")

	writeOld(t, filepath.Join(dir, "sub", "b.txt"), "TWO")
	changed, _, err := h.Tree(dir)
	require.NoError(t, err)
	assert.NotEqual(t, sum, changed, "a changed content changes the hash")

	require.NoError(t, os.Rename(filepath.Join(dir, "sub", "b.txt"), filepath.Join(dir, "sub", "c.txt")))
	renamed, _, err := h.Tree(dir)
	require.NoError(t, err)
	assert.NotEqual(t, changed, renamed, "a renamed file changes the hash")
}

// TestHasherKeepsHashesBySizeAndTime shows the kept hashes are used: a
// file rewritten with the same size and time keeps its old hash (which is
// the bargain the cache makes), while a fresh Hasher without the kept
// file sees the new content.
func TestHasherKeepsHashesBySizeAndTime(t *testing.T) {
	dir, kept := t.TempDir(), t.TempDir()
	p := filepath.Join(dir, "data.csv")
	writeOld(t, p, "aaaa")
	first, _, err := (&Hasher{Dir: kept}).Tree(dir)
	require.NoError(t, err)

	info, err := os.Stat(p)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(p, []byte("bbbb"), 0o644))
	require.NoError(t, os.Chtimes(p, info.ModTime(), info.ModTime()))

	again, _, err := (&Hasher{Dir: kept}).Tree(dir)
	require.NoError(t, err)
	assert.Equal(t, first, again, "the kept hash (read back from its file) stands for the unchanged size and time")
	fresh, _, err := (&Hasher{}).Tree(dir)
	require.NoError(t, err)
	assert.NotEqual(t, first, fresh)
}

func TestHasherDoesNotKeepRacyFiles(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "new.txt")
	require.NoError(t, os.WriteFile(p, []byte("xx"), 0o644))
	h := &Hasher{}
	first, _, err := h.Tree(dir)
	require.NoError(t, err)
	info, err := os.Stat(p)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(p, []byte("yy"), 0o644))
	require.NoError(t, os.Chtimes(p, info.ModTime(), info.ModTime()))
	second, _, err := h.Tree(dir)
	require.NoError(t, err)
	assert.NotEqual(t, first, second, "a file written within the racy window is hashed again")
}

func TestHasherSingleFile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "one.bin")
	writeOld(t, p, "content")
	sum, files, err := (&Hasher{}).Tree(p)
	require.NoError(t, err)
	require.Len(t, files, 1)
	assert.Equal(t, "", files[0].Path)
	assert.NotEmpty(t, sum)
}
