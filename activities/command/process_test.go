package command

import (
	"context"
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
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"
)

// alive says whether pid is a live (not zombie) process. The host's init
// may leave killed orphans as zombies for a while; they are dead.
func alive(pid int) bool {
	st, ok := readProcStat(pid, make([]byte, 1024))
	return ok && st.live()
}

// recordPids is a shell snippet that writes the listed pids to file
// atomically, so a reader never sees half of it.
func recordPids(file string, pids ...string) string {
	return "echo " + strings.Join(pids, " ") + " > " + file + ".tmp && mv " + file + ".tmp " + file
}

func readPids(t *testing.T, file string) []int {
	t.Helper()
	var pids []int
	for _, f := range strings.Fields(readFile(t, file)) {
		pid, err := strconv.Atoi(f)
		require.NoError(t, err)
		pids = append(pids, pid)
	}
	require.NotEmpty(t, pids)
	return pids
}

// stubbornGroup is a command whose process group holds a plain background
// sleep and a shell that ignores SIGTERM (so only SIGKILL stops it); it
// records the pids in file, then waits for ever.
func stubbornGroup(file string) string {
	return `sleep 300 & p1=$!; sh -c 'trap "" TERM; while :; do sleep 1; done' & p2=$!; ` +
		recordPids(file, "$$", "$p1", "$p2") + "; wait"
}

func TestRunCommandCancelKillsProcessGroup(t *testing.T) {
	env, a := newEnv(t)
	a.KillGrace = 200 * time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	env.SetWorkerOptions(worker.Options{BackgroundActivityContext: ctx})
	file := filepath.Join(t.TempDir(), "pids")
	in := stepInput(tmpl(txt(stubbornGroup(file))))

	done := make(chan error, 1)
	go func() {
		_, err := runStep(env, in)
		done <- err
	}()
	// Waits for the command to have started its children and recorded them.
	require.Eventually(t, func() bool { _, err := os.Stat(file); return err == nil }, 30*time.Second, 10*time.Millisecond)
	cancel()
	err := <-done
	// A worker-side cancel reports the context's error; a server-side cancel
	// (cause temporal.CanceledError) would report the activity as canceled.
	require.ErrorContains(t, err, "context canceled")

	pids := readPids(t, file)
	for _, pid := range pids {
		assert.False(t, alive(pid), "pid %d outlived the cancelled step", pid)
	}
	log := readFile(t, filepath.Join(artifactsDir(a, in), "user_logs", "std_log.txt"))
	assert.Contains(t, log, "porch: the step was stopped (context canceled)")
}

func TestRunCommandStartToCloseTimeoutKills(t *testing.T) {
	env, a := newEnv(t)
	a.KillGrace = 200 * time.Millisecond
	// The activity's deadline, as StartToClose sets it on a worker: long
	// enough for the command to start and record its processes on a
	// loaded machine (2 s was not, beside the other packages' tests).
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Second)
	defer cancel()
	env.SetWorkerOptions(worker.Options{BackgroundActivityContext: ctx})
	file := filepath.Join(t.TempDir(), "pids")
	_, err := runStep(env, stepInput(tmpl(txt(stubbornGroup(file)))))
	var timeout *temporal.TimeoutError
	require.ErrorAs(t, err, &timeout)
	pids := readPids(t, file)
	for _, pid := range pids {
		assert.False(t, alive(pid), "pid %d outlived the timed-out step", pid)
	}
}

func TestRunCommandLimitsTimeout(t *testing.T) {
	env, a := newEnv(t)
	file := filepath.Join(t.TempDir(), "pids")
	in := stepInput(tmpl(txt("sleep 300 & " + recordPids(file, "$$", "$!") + "; echo waiting >&2; wait")))
	in.Command.TimeoutSeconds = 1
	_, err := runStep(env, in)
	appErr := appError(t, err)
	assert.True(t, appErr.NonRetryable())
	assert.Equal(t, CommandTimedOutType, appErr.Type())
	assert.Contains(t, appErr.Message(), "limits.timeout of 1s")
	assert.Contains(t, appErr.Message(), "\nwaiting")
	for _, pid := range readPids(t, file) {
		assert.False(t, alive(pid), "pid %d outlived limits.timeout", pid)
	}
	assert.Contains(t, readFile(t, filepath.Join(artifactsDir(a, in), "user_logs", "std_log.txt")), "limits.timeout")
}

func TestRunCommandStopsLeftoverChildren(t *testing.T) {
	env, a := newEnv(t)
	file := filepath.Join(t.TempDir(), "pids")
	in := stepInput(tmpl(txt("sleep 300 & " + recordPids(file, "$!"))))
	_, err := runStep(env, in)
	require.NoError(t, err)
	pids := readPids(t, file)
	assert.False(t, alive(pids[0]), "the background sleep outlived its step")
	log := readFile(t, filepath.Join(artifactsDir(a, in), "user_logs", "std_log.txt"))
	assert.Contains(t, log, "porch: stopped 1 background processes the command left running")
}

func TestProcStatParsesOddNames(t *testing.T) {
	st, ok := readProcStat(os.Getpid(), make([]byte, 1024))
	require.True(t, ok)
	assert.NotZero(t, st.state)
	assert.Equal(t, syscall.Getpgrp(), st.pgrp)
	assert.Positive(t, st.rssPages, "a running test has resident memory")
	_, ok = readProcStat(-1, make([]byte, 1024))
	assert.False(t, ok)
}

// A managed step that prints the worker's credentials leaves them in
// neither its log nor its failure's tail.
func TestManagedStepOutputIsRedacted(t *testing.T) {
	dir := t.TempDir()
	spec := procSpec{
		line:    `echo "key=$K"; echo "err=$K" >&2; exit 3`,
		dir:     dir,
		env:     []string{"K=the-worker-secret", "PATH=/usr/bin:/bin"},
		log:     dir + "/std_log.txt",
		secrets: []string{"the-worker-secret"},
	}
	res, err := runProcess(t.Context(), spec, time.Second)
	assert.NoError(t, err)
	assert.Equal(t, 3, res.state.ExitCode())
	log := readFile(t, spec.log)
	assert.Contains(t, log, "key=<redacted>\n")
	assert.Contains(t, log, "err=<redacted>\n")
	assert.NotContains(t, log, "the-worker-secret")
	assert.Equal(t, "err=<redacted>", strings.Join(res.tail, "|"))
}

// TestLeftoversAreFoundAmongTheNewcomers: a group's background process has
// an id given after the group's first process, so a look at those few ids
// finds it, as a read of every process would.
func TestLeftoversAreFoundAmongTheNewcomers(t *testing.T) {
	since := hostPIDs()
	require.Positive(t, since.forks, "/proc/stat counts forks")
	require.Positive(t, since.tasks, "/proc/loadavg counts tasks")
	cmd := exec.Command("/bin/sh", "-c", "sleep 300 >/dev/null 2>&1 & echo $!")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := cmd.Output()
	require.NoError(t, err)
	pgid := cmd.Process.Pid
	t.Cleanup(func() { _ = syscall.Kill(-pgid, syscall.SIGKILL) })
	child, err := strconv.Atoi(strings.TrimSpace(string(out)))
	require.NoError(t, err)

	ids := newcomers{first: pgid, since: since}
	if pids, ok := ids.pids(); ok {
		assert.Contains(t, pids, child, "the background sleep is a newcomer")
	} else {
		// A busy host gave out more than maxNewcomers ids meanwhile, or
		// they wrapped at pid_max: the listing is read, as checked below.
		t.Logf("the newcomers cannot be told apart (first %d): the listing is read", pgid)
	}
	assert.Equal(t, 1, groupMembers(pgid, ids), "the sleep; the exited leader does not count")
	assert.Equal(t, 1, groupMembers(pgid, newcomers{first: pgid, since: pidCounts{forks: -1, tasks: -1, last: -1}}), "the same from the listing")
	assert.Equal(t, 1, stopLeftovers(pgid, ids, 2*time.Second))
	assert.Equal(t, 0, groupMembers(pgid, ids), "stopped")
}

// TestTooManyForksSinceMeansTheListing: ids that may have gone all the way
// round since the group's first process cannot be told by their order.
func TestTooManyForksSinceMeansTheListing(t *testing.T) {
	now := hostPIDs()
	long := newcomers{first: os.Getpid(), since: pidCounts{forks: now.forks - int64(readPIDMax()/4), tasks: now.tasks}}
	_, ok := long.pids()
	assert.False(t, ok)
	wrapped := newcomers{first: readPIDMax() - 1, since: now}
	_, ok = wrapped.pids()
	assert.False(t, ok, "the last id given is below the first: they wrapped")
}
