package stepio

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestAStepsLockWaitsForItsEarlierAttempt: a second attempt of a step
// waits while the first holds the step's lock, and takes it once the
// first lets go; the run's other steps, and the step's other instances,
// lock at once. No file is created for a step.
func TestAStepsLockWaitsForItsEarlierAttempt(t *testing.T) {
	h := &Host{Home: t.TempDir()}
	ctx := context.Background()
	step := Step{RunID: "r1", StepPath: "train"}
	unlock, err := h.LockStep(ctx, step, 0, false)
	require.NoError(t, err)

	taken := make(chan func(), 1)
	go func() {
		again, err := h.LockStep(ctx, step, 0, false)
		assert.NoError(t, err)
		taken <- again
	}()
	select {
	case <-taken:
		t.Fatal("a second attempt took the lock the first holds")
	case <-time.After(3 * lockPoll):
	}

	// The others lock at once, or give up rather than hang the test.
	soon, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	other, err := h.LockStep(soon, Step{RunID: "r1", StepPath: "score"}, 0, false)
	require.NoError(t, err, "another step of the run is not held up")
	nested, err := h.LockStep(soon, Step{RunID: "r1", StepPath: "inner/train"}, 0, false)
	require.NoError(t, err, "a step of a nested pipeline is not held up")
	instance, err := h.LockStep(soon, step, 1, true)
	require.NoError(t, err, "the step's second instance has a lock of its own")
	otherRun, err := h.LockStep(soon, Step{RunID: "r2", StepPath: "train"}, 0, false)
	require.NoError(t, err, "the same step of another run is not held up")

	unlock()
	select {
	case again := <-taken:
		again()
	case <-time.After(10 * time.Second):
		t.Fatal("the second attempt never took the lock the first let go")
	}
	for _, u := range []func(){other, nested, instance, otherRun} {
		u()
	}
	entries, err := os.ReadDir(filepath.Join(h.Home, "work", "r1"))
	require.NoError(t, err)
	require.Len(t, entries, 1, "one file of locks for the run's steps")
	assert.Equal(t, locksFile, entries[0].Name())
}

// TestWaitingForAStepsLockEndsWithTheActivity: an attempt that waits for
// the lock gives up when its activity is canceled.
func TestWaitingForAStepsLockEndsWithTheActivity(t *testing.T) {
	h := &Host{Home: t.TempDir()}
	step := Step{RunID: "r1", StepPath: "train"}
	unlock, err := h.LockStep(context.Background(), step, 0, false)
	require.NoError(t, err)
	defer unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 3*lockPoll)
	defer cancel()
	_, err = h.LockStep(ctx, step, 0, false)
	assert.ErrorIs(t, err, context.DeadlineExceeded)
}
