package lifeline

import (
	"bufio"
	"fmt"
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

// helperEnv makes the test binary a "worker": it starts a process group
// with a lifeline, prints the group's id and waits to be killed.
const helperEnv = "PORCH_LIFELINE_HELPER"

// cleanupEnv names a file the helper's lifeline cleanup writes.
const cleanupEnv = "PORCH_LIFELINE_CLEANUP"

func TestMain(m *testing.M) {
	switch os.Getenv(helperEnv) {
	case "":
	case "run":
		os.Exit(runHelper())
	default:
		os.Exit(worker())
	}
	os.Exit(m.Run())
}

func worker() int {
	// The shell starts a background child, as a step's command may: a
	// parent-death signal would reach the shell only.
	var cleanup []string
	if marker := os.Getenv(cleanupEnv); marker != "" {
		cleanup = []string{"/bin/sh", "-c", "echo \"it's gone\" > \"$1\"", "cleanup", marker}
	}
	l, err := Start(cleanup...)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	cmd := exec.Command("/bin/sh", "-c", "sleep 300 & sleep 300")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pgid: l.Pgid()}
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Println(l.Pgid())
	select {}
}

// live counts the processes of group pgid that have not exited.
func live(pgid int) int {
	entries, _ := os.ReadDir("/proc")
	n := 0
	for _, e := range entries {
		f := statFields(e.Name())
		if len(f) > 2 && f[2] == strconv.Itoa(pgid) && running(f) {
			n++
		}
	}
	return n
}

// statFields are the fields of /proc/<pid>/stat after the command's
// closing parenthesis: state, ppid, pgrp, ...; none when pid is not a
// process.
func statFields(pid string) []string {
	b, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return nil
	}
	return strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
}

// running says the process of stat fields f has not exited.
func running(f []string) bool { return len(f) > 0 && f[0] != "Z" && f[0] != "X" }

func TestAGroupDiesWithItsWorkerKilledBySIGKILL(t *testing.T) {
	killWorker(t, "start", "")
}

// TestCleanupRunsWhenTheWorkerDies: a container's group has its removal
// as cleanup, which the watcher runs (here, writing a file) before it
// kills the group.
func TestCleanupRunsWhenTheWorkerDies(t *testing.T) {
	marker := filepath.Join(t.TempDir(), "cleaned")
	killWorker(t, "start", marker)
	b, err := os.ReadFile(marker)
	require.NoError(t, err, "the cleanup ran")
	assert.Equal(t, "it's gone\n", string(b))
}

func TestReleaseRunsNoCleanup(t *testing.T) {
	marker := filepath.Join(t.TempDir(), "cleaned")
	l, err := Start("/bin/sh", "-c", "echo > "+marker)
	require.NoError(t, err)
	l.Release()
	assert.NoFileExists(t, marker)
}

// killWorker starts the helper worker (helper "start", or "run" for
// runHelper), waits for its group to run, kills the worker by SIGKILL and
// checks that the whole group dies.
func killWorker(t *testing.T, helper, marker string) {
	self, err := os.Executable()
	require.NoError(t, err)
	w := exec.Command(self, "-test.run=^$")
	w.Env = append(os.Environ(), helperEnv+"="+helper, cleanupEnv+"="+marker)
	out, err := w.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, w.Start())
	t.Cleanup(func() { _ = w.Process.Kill(); _ = w.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	require.NoError(t, err)
	pgid, err := strconv.Atoi(strings.TrimSpace(line))
	require.NoError(t, err)
	t.Cleanup(func() { _ = syscall.Kill(-pgid, syscall.SIGKILL) })
	// Waits for the shell to have started its children.
	require.Eventually(t, func() bool { return live(pgid) >= 4 }, 5*time.Second, 10*time.Millisecond,
		"the shell, its two sleeps and the lifeline run")

	require.NoError(t, w.Process.Signal(syscall.SIGKILL))
	_ = w.Wait()
	// Waits for the lifeline to read end-of-file and kill its group.
	assert.Eventually(t, func() bool { return live(pgid) == 0 }, 5*time.Second, 10*time.Millisecond,
		"no process of the group outlives its worker by 5 s")
}

func TestReleaseEndsTheLifelineAndWhatIsLeftOfTheGroup(t *testing.T) {
	l, err := Start()
	require.NoError(t, err)
	cmd := exec.Command("/bin/sh", "-c", "sleep 300 & exit 0")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pgid: l.Pgid()}
	require.NoError(t, cmd.Start())
	require.NoError(t, cmd.Wait())
	l.Release()
	// SIGKILL lands asynchronously: waits for it.
	assert.Eventually(t, func() bool { return live(l.Pgid()) == 0 }, 5*time.Second, 10*time.Millisecond,
		"the background sleep goes with the lifeline")
}

// spareReady waits for the spare a release starts in the background.
func spareReady(t *testing.T) *Line {
	t.Helper()
	var l *Line
	require.Eventually(t, func() bool {
		spares.mu.Lock()
		defer spares.mu.Unlock()
		l = spares.line
		return l != nil
	}, 5*time.Second, time.Millisecond, "a release starts a spare lifeline")
	return l
}

func TestStartHandsOutTheSpareStartedAhead(t *testing.T) {
	first, err := Start()
	require.NoError(t, err)
	first.Release()
	ready := spareReady(t)
	second, err := Start()
	require.NoError(t, err)
	defer second.Release()
	assert.Same(t, ready, second, "the spare is handed out")
	assert.True(t, second.alive())
	// A group led by the spare dies with it as any other.
	cmd := exec.Command("/bin/sh", "-c", "sleep 300 & exit 0")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pgid: second.Pgid()}
	require.NoError(t, cmd.Start())
	require.NoError(t, cmd.Wait())
	second.Release()
	assert.Eventually(t, func() bool { return live(second.Pgid()) == 0 }, 5*time.Second, 10*time.Millisecond)
}

// TestADeadSpareIsNotHandedOut: a reclaimed node's worker kills every
// group it started, the spare's too; a group led by a dead watcher would
// not die with its worker.
func TestADeadSpareIsNotHandedOut(t *testing.T) {
	first, err := Start()
	require.NoError(t, err)
	first.Release()
	dead := spareReady(t)
	require.NoError(t, syscall.Kill(-dead.Pgid(), syscall.SIGKILL))
	require.Eventually(t, func() bool { return !dead.alive() }, 5*time.Second, time.Millisecond)
	l, err := Start()
	require.NoError(t, err)
	defer l.Release()
	assert.NotSame(t, dead, l)
	assert.True(t, l.alive())
}

// TestKillAllKillsEveryGroupAndNothingElse: KillAll kills the groups the
// worker's lifelines lead, without their cleanup, and spares the
// program's other children, in its own group or one of their own (a test's
// storage server, say).
func TestKillAllKillsEveryGroupAndNothingElse(t *testing.T) {
	marker := filepath.Join(t.TempDir(), "cleanup")
	var groups []*Line
	for _, cleanup := range [][]string{nil, {"/bin/sh", "-c", "echo > " + marker}} {
		l, err := Start(cleanup...)
		require.NoError(t, err)
		groups = append(groups, l)
		cmd := exec.Command("/bin/sh", "-c", "sleep 300 & sleep 300")
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pgid: l.Pgid()}
		require.NoError(t, cmd.Start())
		t.Cleanup(func() { _ = cmd.Wait() })
		require.Eventually(t, func() bool { return live(l.Pgid()) >= 4 }, 5*time.Second, 10*time.Millisecond)
	}
	var others []*exec.Cmd
	for _, own := range []bool{false, true} {
		cmd := exec.Command("sleep", "300")
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: own}
		require.NoError(t, cmd.Start())
		others = append(others, cmd)
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	}

	KillAll()
	for _, l := range groups {
		assert.Eventually(t, func() bool { return live(l.Pgid()) == 0 }, 5*time.Second, 10*time.Millisecond,
			"every process of group %d dies", l.Pgid())
	}
	time.Sleep(100 * time.Millisecond)
	assert.NoFileExists(t, marker, "a killed watcher runs no cleanup")
	for i, cmd := range others {
		assert.True(t, running(statFields(strconv.Itoa(cmd.Process.Pid))), "the program's other child %d runs on", i)
	}
	for _, l := range groups {
		l.Release()
	}
}
