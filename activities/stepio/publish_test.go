package stepio

import (
	"os"
	"path/filepath"
	"strings"
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

// assertNoStaging says no attempt's staging folder is left beside final.
func assertNoStaging(t *testing.T, final string, msg ...any) {
	t.Helper()
	left, err := filepath.Glob(filepath.Join(filepath.Dir(final), stagingPrefix+"*"))
	require.NoError(t, err)
	assert.Empty(t, left, msg...)
}

func TestAStagedFolderLandsWholeAndLeavesNoStaging(t *testing.T) {
	final := filepath.Join(t.TempDir(), "run", "step", "model")
	s, err := stage("model", final, "r1/e1", "1", false, false)
	require.NoError(t, err)
	assert.NoDirExists(t, final, "nothing shows before the attempt succeeds")
	write(t, filepath.Join(s.path(), "w.bin"), "weights")
	require.NoError(t, s.publish())
	assert.Equal(t, "weights", read(t, filepath.Join(final, "w.bin")))
	assertNoStaging(t, final)
}

func TestALaterAttemptClearsWhatAnAbandonedOneStaged(t *testing.T) {
	final := filepath.Join(t.TempDir(), "out")
	first, err := stage("out", final, "r1/e1", "1", false, false)
	require.NoError(t, err)
	write(t, filepath.Join(first.path(), "rows.txt"), "attempt 1, half done\n")
	// The first attempt's worker died: it never publishes nor discards.
	second, err := stage("out", final, "r1/e1", "2", false, false)
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
	s, err := stage("shared", final, "r1/e1", "1", false, false)
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
	s, err := stage("m", final, "r1/e1", "2", true, false)
	require.NoError(t, err)
	write(t, s.path(), "new")
	require.NoError(t, s.publish())
	assert.Equal(t, "new", read(t, final))
	assertNoStaging(t, final)
}

func TestADiscardedAttemptLeavesTheOutputUntouched(t *testing.T) {
	final := filepath.Join(t.TempDir(), "out")
	write(t, filepath.Join(final, "good.txt"), "from an attempt that succeeded")
	s, err := stage("out", final, "r1/e1", "4", false, false)
	require.NoError(t, err)
	write(t, filepath.Join(s.path(), "good.txt"), "partial")
	require.NoError(t, s.discard())
	assert.Equal(t, "from an attempt that succeeded", read(t, filepath.Join(final, "good.txt")))
	assertNoStaging(t, final)
}

func TestAFolderOutputNeverDeletesAFileAtItsPath(t *testing.T) {
	final := filepath.Join(t.TempDir(), "out")
	write(t, final, "a user's file")
	s, err := stage("out", final, "r1/e1", "1", false, false)
	require.NoError(t, err)
	write(t, filepath.Join(s.path(), "model.bin"), "weights")
	assert.Error(t, s.publish(), "a folder cannot land where a file is")
	assert.Equal(t, "a user's file", read(t, final))
}

// TestAnAttemptTouchesOnlyItsOwnExecutionsStaging: two runs write one
// fixed path, and a step's execution is replaced (a reset) while its
// first attempt still runs: a later attempt clears only its own
// execution's earlier attempts, a discard only its own folder, and each
// publishes exactly what it wrote.
func TestAnAttemptTouchesOnlyItsOwnExecutionsStaging(t *testing.T) {
	final := filepath.Join(t.TempDir(), "shared")
	a1, err := stage("shared", final, "run-a/exec-1", "1", false, false)
	require.NoError(t, err)
	write(t, filepath.Join(a1.path(), "a.txt"), "run a")
	// Another run's second attempt, and a new execution of run a's step.
	b2, err := stage("shared", final, "run-b/exec-2", "2", false, false)
	require.NoError(t, err)
	write(t, filepath.Join(b2.path(), "b.txt"), "run b")
	reset, err := stage("shared", final, "run-a/exec-3", "1", false, false)
	require.NoError(t, err)
	write(t, filepath.Join(reset.path(), "a.txt"), "run a, reset")
	assert.Equal(t, "run a", read(t, filepath.Join(a1.path(), "a.txt")), "no other attempt clears run a's")

	// The abandoned attempt is discarded: the others keep their staging.
	require.NoError(t, a1.discard())
	assert.Equal(t, "run a, reset", read(t, filepath.Join(reset.path(), "a.txt")))
	require.NoError(t, b2.publish())
	require.NoError(t, reset.publish())
	assert.Equal(t, "run b", read(t, filepath.Join(final, "b.txt")))
	assert.Equal(t, "run a, reset", read(t, filepath.Join(final, "a.txt")))
	entries, err := os.ReadDir(final)
	require.NoError(t, err)
	assert.Len(t, entries, 2, "each attempt publishes only what it wrote")
	assertNoStaging(t, final, "the staging goes once every attempt has ended")
}

// TestAStepsOwnFolderIsReplacedWhole: an output at the step's own
// location (no path:) that an earlier execution of the step published (a
// reset run) is replaced by the new attempt's folder, not merged into.
func TestAStepsOwnFolderIsReplacedWhole(t *testing.T) {
	final := filepath.Join(t.TempDir(), "run", "step", "out")
	write(t, filepath.Join(final, "old.txt"), "an earlier execution's")
	write(t, filepath.Join(final, "same.txt"), "old")
	s, err := stage("out", final, "run/e2", "1", false, true)
	require.NoError(t, err)
	write(t, filepath.Join(s.path(), "same.txt"), "new")
	require.NoError(t, s.publish())
	entries, err := os.ReadDir(final)
	require.NoError(t, err)
	require.Len(t, entries, 1, "only the new attempt's files")
	assert.Equal(t, "new", read(t, filepath.Join(final, "same.txt")))
	assertNoStaging(t, final)
}

// TestAnAttemptStagedAgainStartsFromNothing: an activity retried on the
// same worker under the same attempt number finds its own staging.
func TestAnAttemptStagedAgainStartsFromNothing(t *testing.T) {
	final := filepath.Join(t.TempDir(), "out")
	first, err := stage("out", final, "r1/e1", "1", false, false)
	require.NoError(t, err)
	write(t, filepath.Join(first.path(), "half.txt"), "half done")
	again, err := stage("out", final, "r1/e1", "1", false, false)
	require.NoError(t, err)
	assert.Equal(t, first.dir, again.dir)
	entries, err := os.ReadDir(again.dir)
	require.NoError(t, err)
	assert.Empty(t, entries)
	assert.Equal(t, filepath.Join(filepath.Dir(final), ".porch-staging.out.r1.e1.1"), again.dir, "one folder an attempt, beside the output")
}

// TestAnOutputWithALongNameStagesBesideIt: an output whose name, with the
// run and the execution, is too long for a folder's name stages under a
// hash of them, and its attempts find one another's folders.
func TestAnOutputWithALongNameStagesBesideIt(t *testing.T) {
	name := "o_" + strings.Repeat("o", 240)
	final := filepath.Join(t.TempDir(), "run", "step", name)
	first, err := stage(name, final, "r1/0194d2b4-4b8c-7d1e-9f0a-1b2c3d4e5f60", "1", false, false)
	require.NoError(t, err)
	write(t, filepath.Join(first.path(), "half.txt"), "attempt 1, abandoned")
	second, err := stage(name, final, "r1/0194d2b4-4b8c-7d1e-9f0a-1b2c3d4e5f60", "2", false, false)
	require.NoError(t, err)
	assert.NoDirExists(t, first.dir, "the earlier attempt's staging is found and removed")
	assert.LessOrEqual(t, len(filepath.Base(second.dir)), 255)
	other, err := stage(name, final, "r2/0194d2b4-4b8c-7d1e-9f0a-1b2c3d4e5f61", "2", false, false)
	require.NoError(t, err)
	assert.NotEqual(t, strings.TrimSuffix(second.dir, "2"), strings.TrimSuffix(other.dir, "2"), "another run's execution stages apart")
	require.NoError(t, other.discard())
	write(t, filepath.Join(second.path(), "w.bin"), "weights")
	require.NoError(t, second.publish())
	assert.Equal(t, "weights", read(t, filepath.Join(final, "w.bin")))
	assertNoStaging(t, final)
}
