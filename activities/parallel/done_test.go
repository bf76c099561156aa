package parallel

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/porch-pipelines/porch/activities/internal/testpython"
	"github.com/porch-pipelines/porch/activities/stepio"
)

// TestAGroupRecordsItsMiniBatchesInOneFile runs four of six mini-batches
// as a group: their done records are one file, not a file each, and
// every reader of done records sees them: another worker of the same
// home skips them, a resumed step lists only the other two, the count
// of a replanned step is theirs, and FinishParallel appends every
// mini-batch's rows once, in order.
func TestAGroupRecordsItsMiniBatchesInOneFile(t *testing.T) {
	home := t.TempDir()
	a, p, _ := plannedStep(t, home, echoScript)
	require.Equal(t, 6, p.Batches)
	ctx := context.Background()

	res, err := a.RunMiniBatches(ctx, MiniBatchesInput{Ref: p.Ref, Indexes: []int{0, 1, 2, 3}})
	require.NoError(t, err)
	require.Len(t, res.Succeeded, 4)
	f, err := a.parallelFolders(p.Ref)
	require.NoError(t, err)
	groups, err := filepath.Glob(filepath.Join(f.artifacts, "porch", "done", "groups", "*.jsonl"))
	require.NoError(t, err)
	require.Len(t, groups, 1, "the group's records are one file")
	assert.Regexp(t, `^0-3\.n1\.[0-9]+\.jsonl$`, filepath.Base(groups[0]), "named for its first and last mini-batch and its node")
	for i := range 4 {
		assert.NoFileExists(t, f.done(i), "mini-batch %d has no file of its own", i)
	}

	// Another worker process on the same home reads the group's file.
	other := &Activities{Host: &stepio.Host{Home: home, Node: "n2"}, Python: testpython.Interpreter(t)}
	t.Cleanup(func() { other.Close(ctx) })
	again, err := other.RunMiniBatch(ctx, MiniBatchInput{Ref: p.Ref, Index: 2})
	require.NoError(t, err)
	assert.True(t, again.Skipped, "a mini-batch a group finished is not run again")
	assert.Equal(t, "n1", again.Node, "its record says where it ran")

	pending, err := other.ListPendingMiniBatches(ctx, ListPendingInput{Ref: p.Ref, Limit: 10})
	require.NoError(t, err)
	assert.Equal(t, []int{4, 5}, pending.Indexes)

	for _, i := range []int{4, 5} {
		r, err := other.RunMiniBatch(ctx, MiniBatchInput{Ref: p.Ref, Index: i})
		require.NoError(t, err)
		assert.False(t, r.Skipped)
	}
	n, err := f.countDone(ctx)
	require.NoError(t, err)
	assert.Equal(t, 6, n, "a group's records and single files count once each")

	assert.Equal(t, echoRows(12), finishEchoStep(t, a, p), "every mini-batch's rows once, in order")
}

// TestABrokenGroupRecordFileIsAnError: a record file that does not parse
// fails the reader with the file's name and line, rather than counting
// its mini-batches as not done.
func TestABrokenGroupRecordFileIsAnError(t *testing.T) {
	a, p, _ := plannedStep(t, t.TempDir(), echoScript)
	f, err := a.parallelFolders(p.Ref)
	require.NoError(t, err)
	file := f.local(doneGroupsRel + "/0-1.n9.1.jsonl")
	require.NoError(t, os.MkdirAll(filepath.Dir(file), 0o755))
	require.NoError(t, os.WriteFile(file, []byte("{\"index\":0}\n{\"index\":\n"), 0o644))
	_, err = a.ListPendingMiniBatches(context.Background(), ListPendingInput{Ref: p.Ref, Limit: 10})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "0-1.n9.1.jsonl, line 2")
}
