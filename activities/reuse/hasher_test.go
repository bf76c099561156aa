package reuse

import (
	"os"
	"path/filepath"
	"strings"
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

// later is a clock an hour ahead: files written by a test are then past
// the racy window, and their hashes are kept.
func later() time.Time { return time.Now().Add(time.Hour) }

// TestHasherKeepsHashesUntilAFileChanges shows the kept hashes are used
// (a kept hash made up stands for the file while it is unchanged), and
// that a file written again with its size and modification time put back,
// as `touch -r` does, or replaced by another file of the same size and
// time, is hashed again: its inode-change time or inode tell.
func TestHasherKeepsHashesUntilAFileChanges(t *testing.T) {
	dir, kept := t.TempDir(), t.TempDir()
	p := filepath.Join(dir, "data.csv")
	writeOld(t, p, "aaaa")
	_, files, err := (&Hasher{Dir: kept, clock: later}).Tree(dir)
	require.NoError(t, err)
	require.Equal(t, hashOf("aaaa"), files[0].Hash)

	// Make the kept hash up: a Hasher that reads it back uses it.
	keptFile := (&Hasher{Dir: kept}).keptFile(dir)
	data, err := os.ReadFile(keptFile)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(keptFile, []byte(strings.ReplaceAll(string(data), hashOf("aaaa"), hashOf("made up"))), 0o644))
	_, files, err = (&Hasher{Dir: kept, clock: later}).Tree(dir)
	require.NoError(t, err)
	assert.Equal(t, hashOf("made up"), files[0].Hash, "the kept hash stands for an unchanged file")

	info, err := os.Stat(p)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(p, []byte("bbbb"), 0o644))
	require.NoError(t, os.Chtimes(p, info.ModTime(), info.ModTime())) // touch -r
	after, err := os.Stat(p)
	require.NoError(t, err)
	require.Equal(t, info.Size(), after.Size())
	require.Equal(t, info.ModTime(), after.ModTime())
	_, files, err = (&Hasher{Dir: kept, clock: later}).Tree(dir)
	require.NoError(t, err)
	assert.Equal(t, hashOf("bbbb"), files[0].Hash, "same size and modification time, new content")

	other := filepath.Join(t.TempDir(), "other.csv")
	require.NoError(t, os.WriteFile(other, []byte("cccc"), 0o644))
	require.NoError(t, os.Chtimes(other, info.ModTime(), info.ModTime()))
	require.NoError(t, os.Rename(other, p))
	_, files, err = (&Hasher{Dir: kept, clock: later}).Tree(dir)
	require.NoError(t, err)
	assert.Equal(t, hashOf("cccc"), files[0].Hash, "a file replaced by another of the same size and time")
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
