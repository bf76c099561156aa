package command

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/porch-pipelines/porch/activities/launch"
	"github.com/porch-pipelines/porch/activities/redact"
	"github.com/porch-pipelines/porch/activities/stepio"
)

// procSpec is one process of a step: a shell command line run in its own
// process group.
type procSpec struct {
	line string
	dir  string
	env  []string
	// log receives the header lines, then stdout and stderr as they come.
	log    string
	header []string
	// secrets are kept out of the log and the tail (a managed step's
	// worker credentials, stepSecrets).
	secrets []string
	// cpus are the cores the process may run on (its instance's share of
	// the host); none means any.
	cpus []int
	// started learns the process's pid, which is also its group id.
	started func(pid int)
	// rt runs the process; container, when set, is the container it
	// runs in (rt is then podman or docker), with only the variables of
	// env that the container names.
	rt        launch.Runtime
	container *launch.Container
}

// procResult is how one process ended.
type procResult struct {
	state *os.ProcessState
	// tail is the last tailLines lines of stderr.
	tail []string
	// leftovers counts the processes still in the group after its leader
	// exited; porch stopped them.
	leftovers int
}

// runProcess runs one process to its end. When ctx is done it stops the
// whole process group (SIGTERM, then SIGKILL after grace) and still waits for
// it, so nothing outlives the call. An error means the process could not be
// run at all; how it ended is in the result.
func runProcess(ctx context.Context, spec procSpec, grace time.Duration) (procResult, error) {
	var res procResult
	logf, err := os.OpenFile(spec.log, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return res, fmt.Errorf("open step log: %w", err)
	}
	defer logf.Close()
	if err := stepio.WriteLines(logf, spec.header); err != nil {
		return res, fmt.Errorf("write step log: %w", err)
	}
	tail := newTailBuffer(tailLines, maxTailLine)
	var pipes []*os.File
	defer func() {
		for _, p := range pipes {
			p.Close()
		}
	}()
	// Files, not writers: Wait does not wait for background children
	// holding a pipe. Stdout goes straight to the log unless secrets must
	// be kept out of it.
	pipe := func() (*os.File, *os.File, error) {
		pr, pw, err := os.Pipe()
		if err != nil {
			return nil, nil, fmt.Errorf("create output pipe: %w", err)
		}
		pipes = append(pipes, pr)
		return pr, pw, nil
	}
	errR, errW, err := pipe()
	if err != nil {
		return res, err
	}
	outR, outW := (*os.File)(nil), logf
	if len(spec.secrets) > 0 {
		if outR, outW, err = pipe(); err != nil {
			errW.Close()
			return res, err
		}
	}
	// The step's group dies with the worker, even by SIGKILL: an attempt
	// that outlived its worker would write outputs beside the next one's.
	// Its lifeline leads the group, so its id stays the step's until the
	// lifeline is released.
	grp, err := spec.rt.NewGroup(spec.containerName())
	if err != nil {
		errW.Close()
		if outR != nil {
			outW.Close()
		}
		return res, err
	}
	defer grp.Release()
	pgid := grp.Pgid()
	argv := []string{"/bin/sh", "-c", spec.line}
	var cmd *exec.Cmd
	if spec.container != nil {
		cmd = grp.Run(*spec.container, argv)
	} else {
		cmd = grp.Host(argv, spec.dir, spec.env)
	}
	cmd.Stdout, cmd.Stderr = outW, errW
	since := hostPIDs()
	err = grp.Start(cmd, spec.cpus)
	errW.Close()
	if outR != nil {
		outW.Close()
	}
	if err != nil {
		return res, fmt.Errorf("start %s: %w", cmd.Path, err)
	}
	if spec.started != nil {
		spec.started(pgid)
	}
	var pumps sync.WaitGroup
	pumps.Add(1)
	go func() {
		defer pumps.Done()
		pump(errR, logf, tail, spec.secrets)
	}()
	if outR != nil {
		pumps.Add(1)
		go func() {
			defer pumps.Done()
			pump(outR, logf, nil, spec.secrets)
		}()
	}
	pumped := make(chan struct{})
	go func() {
		pumps.Wait()
		close(pumped)
	}()
	pid := cmd.Process.Pid
	exited := make(chan struct{})
	go func() {
		waitExited(pid)
		close(exited)
	}()
	select {
	case <-exited:
	case <-ctx.Done():
		terminate(grp, exited, grace)
		// The client may have died before its container.
		grp.Remove()
	}
	res.leftovers = stopLeftovers(pgid, newcomers{first: cmd.Process.Pid, since: since}, grace)
	_ = cmd.Wait() // the exit status is in cmd.ProcessState
	// A process that left the group (setsid) may hold a pipe open for ever.
	select {
	case <-pumped:
	case <-time.After(grace):
		for _, p := range pipes {
			p.Close()
		}
		<-pumped
	}
	res.state, res.tail = cmd.ProcessState, tail.lines()
	if res.state == nil {
		return res, errors.New("wait for /bin/sh: no exit status")
	}
	return res, nil
}

// pump copies a process's output to the log as it comes and, for stderr,
// keeps its tail, both without the secrets. It drains the pipe even when
// the log cannot be written, so the child never blocks.
func pump(r io.Reader, log io.Writer, tail *tailBuffer, secrets []string) {
	var w io.Writer = log
	if tail != nil {
		w = io.MultiWriter(log, tail)
	}
	var red *redact.Writer
	if len(secrets) > 0 {
		red = redact.NewWriter(w, secrets)
		w = red
	}
	buf := make([]byte, 32<<10)
	for {
		n, err := r.Read(buf)
		if n > 0 {
			_, _ = w.Write(buf[:n])
		}
		if err != nil {
			break
		}
	}
	if red != nil {
		_ = red.Close()
	}
	if tail != nil {
		tail.flush()
	}
}

// waitExited blocks until process pid has exited, without reaping it.
func waitExited(pid int) {
	for {
		var info unix.Siginfo
		err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if err != unix.EINTR {
			return
		}
	}
}

// terminate stops a running process group, and its container: SIGTERM,
// then SIGKILL when the leader has not exited after grace. It returns once
// the leader has exited.
func terminate(grp *launch.Group, exited <-chan struct{}, grace time.Duration) {
	grp.Signal(syscall.SIGTERM)
	timer := time.NewTimer(grace)
	defer timer.Stop()
	select {
	case <-exited:
	case <-timer.C:
		grp.Signal(syscall.SIGKILL)
		<-exited
	}
}

// containerName is the spec's container's name, "" on the host.
func (s procSpec) containerName() string {
	if s.container == nil {
		return ""
	}
	return s.container.Name
}

// stopLeftovers stops what is left of a process group whose leader pgid has
// exited (background children): SIGTERM, then SIGKILL after grace. It
// returns how many processes were left. Its members other than the leader
// are among ids.
func stopLeftovers(pgid int, ids newcomers, grace time.Duration) int {
	left := groupMembers(pgid, ids)
	if left == 0 {
		return 0
	}
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	if waitGroupGone(pgid, ids, grace) {
		return left
	}
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	// SIGKILL cannot be caught; only a process stuck in the kernel outlives
	// this wait.
	waitGroupGone(pgid, ids, grace)
	return left
}

// waitGroupGone polls until the group has no live member but its leader,
// the lifeline.
func waitGroupGone(pgid int, ids newcomers, limit time.Duration) bool {
	deadline := time.Now().Add(limit)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for groupMembers(pgid, ids) > 0 {
		if time.Now().After(deadline) {
			return false
		}
		<-tick.C
	}
	return true
}

// groupMembers counts the live processes of group pgid other than the
// leader, among ids. Zombies do not count: they are dead, and a host's
// init may be slow to reap them.
func groupMembers(pgid int, ids newcomers) int {
	pids, ok := ids.pids()
	if !ok {
		// The newcomers' ids are not known: every process's. An
		// unreadable /proc leaves none that porch can see.
		pids, _ = launch.PIDs()
	}
	buf := make([]byte, 1024)
	n := 0
	for _, pid := range pids {
		if pid == pgid {
			continue
		}
		st, ok := readProcStat(pid, buf)
		if ok && st.pgrp == pgid && st.live() {
			n++
		}
	}
	return n
}

// newcomers are the processes a step's command may have started: its
// first process and those started after it. Every process of a step's
// group but its lifeline descends from the first (a process can put only
// itself or its children in a group; another step's process that joined
// on purpose is still killed when the group's lifeline is released), and
// Linux gives process ids out in turn, wrapping at pid_max: the group's
// processes have the ids from first to the last given, unless the ids went
// all the way round since, which the host's fork count rules out. Looking
// at those few ids costs a step a few system calls instead of three for
// every process on the host (a millisecond on a host of a hundred).
type newcomers struct {
	first int
	since pidCounts
}

// pidCounts are what the host has counted of its process ids.
type pidCounts struct {
	// forks is the host's forks since boot, tasks its processes and
	// threads, last the last id given; -1 when unknown.
	forks, tasks int64
	last         int
}

// hostPIDs reads the host's counts (/proc/stat, /proc/loadavg).
func hostPIDs() pidCounts {
	c := pidCounts{forks: -1, tasks: -1, last: -1}
	if b, err := os.ReadFile("/proc/stat"); err == nil {
		if _, rest, ok := bytes.Cut(b, []byte("\nprocesses ")); ok {
			line, _, _ := bytes.Cut(rest, []byte("\n"))
			if v, err := strconv.ParseInt(string(line), 10, 64); err == nil {
				c.forks = v
			}
		}
	}
	// "0.10 0.20 0.30 1/134 15786": runnable/tasks, then the last id given.
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return c
	}
	if f := strings.Fields(string(b)); len(f) >= 5 {
		if _, tasks, ok := strings.Cut(f[3], "/"); ok {
			if v, err := strconv.ParseInt(tasks, 10, 64); err == nil {
				c.tasks = v
			}
		}
		if v, err := strconv.Atoi(f[4]); err == nil {
			c.last = v
		}
	}
	return c
}

// maxNewcomers bounds the ids looked at one by one: past it, one read of
// /proc's listing is cheaper.
const maxNewcomers = 256

// pids are the ids given out from first to the last, when the fork
// count shows they did not go all the way round since, and they are few.
func (n newcomers) pids() ([]int, bool) {
	now := hostPIDs()
	limit := int64(readPIDMax())
	if n.since.forks < 0 || n.since.tasks < 0 || now.forks < 0 || now.last < 0 || limit <= 0 {
		return nil, false
	}
	// Going round means passing every id once: pid_max of them, less the
	// 300 reserved, each given out (a fork) or skipped as in use. A task
	// holds at most three ids in use (its own, its group's, its
	// session's), and there were at most the tasks there were plus those
	// forked since.
	forks := now.forks - n.since.forks
	if forks+3*(n.since.tasks+forks)+300 >= limit {
		return nil, false
	}
	// Ids that wrapped at pid_max since (once in pid_max forks) are
	// looked for in the listing.
	if now.last < n.first || now.last-n.first > maxNewcomers {
		return nil, false
	}
	pids := make([]int, 0, now.last-n.first+1)
	for pid := n.first; pid <= now.last; pid++ {
		pids = append(pids, pid)
	}
	return pids, true
}

// hostPIDMax is the host's pid_max, read once.
var hostPIDMax struct {
	once sync.Once
	n    int
}

func readPIDMax() int {
	hostPIDMax.once.Do(func() {
		if b, err := os.ReadFile("/proc/sys/kernel/pid_max"); err == nil {
			hostPIDMax.n, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		}
	})
	return hostPIDMax.n
}

// procStat is what porch reads of a process from /proc/<pid>/stat.
type procStat struct {
	state byte
	pgrp  int
	// rssPages is the resident set size in pages.
	rssPages int64
}

// live says the process has not exited: zombies are dead, and a host's
// init may be slow to reap them.
func (s procStat) live() bool { return s.state != 'Z' && s.state != 'X' }

// readProcStat reads a process's state, process group and resident size
// from /proc/<pid>/stat into buf. It runs once per process on the host
// after every step, so it uses plain system calls: os.ReadFile costs three
// times as many (poller registration, fstat) for a file that is one read
// long.
func readProcStat(pid int, buf []byte) (procStat, bool) {
	fd, err := syscall.Open("/proc/"+strconv.Itoa(pid)+"/stat", syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return procStat{}, false
	}
	n, err := syscall.Read(fd, buf)
	syscall.Close(fd)
	if err != nil || n <= 0 {
		return procStat{}, false
	}
	b := buf[:n]
	// The command name is in parentheses and may hold spaces or ")".
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return procStat{}, false
	}
	// fields[0] is proc(5)'s field 3 (state), so field k is fields[k-3]:
	// pgrp is 5, rss 24.
	fields := bytes.Fields(b[i+1:])
	if len(fields) < 22 || len(fields[0]) != 1 {
		return procStat{}, false
	}
	pgrp, err := strconv.Atoi(string(fields[2]))
	if err != nil {
		return procStat{}, false
	}
	rss, err := strconv.ParseInt(string(fields[21]), 10, 64)
	if err != nil {
		return procStat{}, false
	}
	return procStat{state: fields[0][0], pgrp: pgrp, rssPages: max(rss, 0)}, true
}

// exitDescription says how a process ended, with a shell-style exit code
// (128+n for a signal).
func exitDescription(st *os.ProcessState) (code int, desc string) {
	if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		sig := ws.Signal()
		return 128 + int(sig), fmt.Sprintf("command was killed by signal %s (%v)", unix.SignalName(sig), sig)
	}
	code = st.ExitCode()
	return code, fmt.Sprintf("command exited with code %d", code)
}
