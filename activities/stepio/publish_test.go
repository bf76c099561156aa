package stepio

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func write(t *testing.T, path, data string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(t, os.WriteFile(path, []byte(data), 0o644))
}

func read(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return string(b)
}

func TestAStagedFolderLandsWholeAndLeavesNoStaging(t *testing.T) {
	final := filepath.Join(t.TempDir(), "run", "step", "model")
	s, err := stage("model", final, "1", false)
	require.NoError(t, err)
	assert.NoDirExists(t, final, "nothing shows before the attempt succeeds")
	write(t, filepath.Join(s.path(), "w.bin"), "weights")
	require.NoError(t, s.publish())
	assert.Equal(t, "weights", read(t, filepath.Join(final, "w.bin")))
	assert.NoDirExists(t, filepath.Join(filepath.Dir(final), stagingDir))
}

func TestALaterAttemptClearsWhatAnAbandonedOneStaged(t *testing.T) {
	final := filepath.Join(t.TempDir(), "out")
	first, err := stage("out", final, "1", false)
	require.NoError(t, err)
	write(t, filepath.Join(first.path(), "rows.txt"), "attempt 1, half done\n")
	// The first attempt's worker died: it never publishes nor discards.
	second, err := stage("out", final, "2", false)
	require.NoError(t, err)
	assert.NoDirExists(t, first.dir, "an earlier attempt's staging is removed")
	write(t, filepath.Join(second.path(), "rows.txt"), "attempt 2\n")
	require.NoError(t, second.publish())
	assert.Equal(t, "attempt 2\n", read(t, filepath.Join(final, "rows.txt")), "exactly one attempt's data")
}

func TestAStagedFolderMergesIntoAFolderThatHoldsData(t *testing.T) {
	final := filepath.Join(t.TempDir(), "shared")
	write(t, filepath.Join(final, "other-run.txt"), "keep")
	write(t, filepath.Join(final, "sub", "old.txt"), "keep too")
	write(t, filepath.Join(final, "same.txt"), "old")
	s, err := stage("shared", final, "1", false)
	require.NoError(t, err)
	write(t, filepath.Join(s.path(), "same.txt"), "new")
	write(t, filepath.Join(s.path(), "sub", "new.txt"), "new")
	require.NoError(t, s.publish())
	assert.Equal(t, "keep", read(t, filepath.Join(final, "other-run.txt")))
	assert.Equal(t, "keep too", read(t, filepath.Join(final, "sub", "old.txt")))
	assert.Equal(t, "new", read(t, filepath.Join(final, "same.txt")))
	assert.Equal(t, "new", read(t, filepath.Join(final, "sub", "new.txt")))
}

func TestAStagedFileReplacesTheOutputFile(t *testing.T) {
	final := filepath.Join(t.TempDir(), "metrics", "m.txt")
	write(t, final, "old")
	s, err := stage("m", final, "2", true)
	require.NoError(t, err)
	write(t, s.path(), "new")
	require.NoError(t, s.publish())
	assert.Equal(t, "new", read(t, final))
	assert.NoDirExists(t, filepath.Join(filepath.Dir(final), stagingDir))
}

func TestADiscardedAttemptLeavesTheOutputUntouched(t *testing.T) {
	final := filepath.Join(t.TempDir(), "out")
	write(t, filepath.Join(final, "good.txt"), "from an attempt that succeeded")
	s, err := stage("out", final, "4", false)
	require.NoError(t, err)
	write(t, filepath.Join(s.path(), "good.txt"), "partial")
	require.NoError(t, s.discard())
	assert.Equal(t, "from an attempt that succeeded", read(t, filepath.Join(final, "good.txt")))
	assert.NoDirExists(t, filepath.Join(filepath.Dir(final), stagingDir))
}

func TestAFolderOutputNeverDeletesAFileAtItsPath(t *testing.T) {
	final := filepath.Join(t.TempDir(), "out")
	write(t, final, "a user's file")
	s, err := stage("out", final, "1", false)
	require.NoError(t, err)
	write(t, filepath.Join(s.path(), "model.bin"), "weights")
	assert.Error(t, s.publish(), "a folder cannot land where a file is")
	assert.Equal(t, "a user's file", read(t, final))
}
