package lifeline

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// runHelper is the helper "worker" of TestRunDiesWithItsWorker: it runs a
// shell with Run, which prints its group's id, and waits to be killed.
func runHelper() int {
	cmd := exec.Command("/bin/sh", "-c", readGroup+"; echo $g; sleep 300 & sleep 300")
	cmd.Stdout = os.Stdout
	_ = Run(context.Background(), cmd, time.Second)
	return 1
}

// readGroup sets a shell's g to its group's id: the fifth field of
// /proc/<pid>/stat ("sh" has no space).
const readGroup = "read -r _ _ _ _ g _ < /proc/$$/stat"

// startedGroup runs a shell with Run in the background and returns its
// group's id, which the shell writes to a file first, and Run's error on
// the channel when it returns.
func startedGroup(t *testing.T, ctx context.Context, script string) (int, <-chan error) {
	t.Helper()
	pgidFile := filepath.Join(t.TempDir(), "pgid")
	cmd := exec.Command("/bin/sh", "-c", readGroup+"; echo $g > "+pgidFile+"; "+script)
	ran := make(chan error, 1)
	go func() { ran <- Run(ctx, cmd, 300*time.Millisecond) }()
	var pgid int
	require.Eventually(t, func() bool {
		b, err := os.ReadFile(pgidFile)
		if err != nil || !strings.HasSuffix(string(b), "\n") {
			return false
		}
		pgid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		return pgid > 0
	}, 5*time.Second, 5*time.Millisecond, "the shell starts")
	t.Cleanup(func() { _ = syscall.Kill(-pgid, syscall.SIGKILL) })
	return pgid, ran
}

func TestRunReturnsTheCommandsEndAndLeavesNothingOfItsGroup(t *testing.T) {
	pgid, ran := startedGroup(t, context.Background(), "sleep 300 & exit 3")
	err := <-ran
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit)
	assert.Equal(t, 3, exit.ExitCode())
	assert.Eventually(t, func() bool { return live(pgid) == 0 }, 5*time.Second, 10*time.Millisecond,
		"the background sleep is killed with the lifeline")
}

func TestRunStopsTheWholeGroupWhenCtxEnds(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	pgid, ran := startedGroup(t, ctx, "sleep 300 & sleep 300")
	require.Eventually(t, func() bool { return live(pgid) >= 4 }, 5*time.Second, 10*time.Millisecond,
		"the shell, its two sleeps and the lifeline run")
	cancel()
	select {
	case err := <-ran:
		assert.True(t, errors.Is(err, context.Canceled), "Run returns ctx's error, not the shell's: %v", err)
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return within 5 s of ctx's end")
	}
	assert.Eventually(t, func() bool { return live(pgid) == 0 }, 5*time.Second, 10*time.Millisecond,
		"the shell's background sleep goes too, not just the shell")
}

func TestRunKillsAGroupThatIgnoresSIGTERMAfterGrace(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	// Ignored signals stay ignored in the children.
	pgid, ran := startedGroup(t, ctx, "trap '' TERM; sleep 300 & sleep 300")
	require.Eventually(t, func() bool { return live(pgid) >= 4 }, 5*time.Second, 10*time.Millisecond)
	cancel()
	stopped := time.Now()
	select {
	case err := <-ran:
		assert.ErrorIs(t, err, context.Canceled)
		assert.GreaterOrEqual(t, time.Since(stopped), 300*time.Millisecond, "SIGKILL waits for the grace")
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return within 5 s of ctx's end")
	}
	assert.Eventually(t, func() bool { return live(pgid) == 0 }, 5*time.Second, 10*time.Millisecond)
}

// TestRunDiesWithItsWorker: what Run runs dies with the worker killed by
// SIGKILL, as a step's processes do.
func TestRunDiesWithItsWorker(t *testing.T) {
	killWorker(t, "run", "")
}
