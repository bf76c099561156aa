// Package lifeline ties the life of a process group porch starts to the
// life of the worker that started it: when the worker dies, however it
// dies (SIGKILL included), the whole group dies within milliseconds.
//
// A parent-death signal is not enough: it reaches only the direct child
// (the shell, not what the shell starts), and Linux sends it when the
// thread that forked exits, not the process. A
// lifeline is a small watcher process inside the group that reads a pipe
// whose write end only the worker holds. The kernel closes that end when
// the worker exits; the watcher then reads end-of-file and kills its own
// group. The watcher leads the group and starts before anything joins it,
// so no process of the group ever runs unwatched, and the group id cannot
// be reused while it waits: it never kills a stranger's group.
//
// A group whose work runs in a container has a cleanup command: the
// container is not a child of the worker (the runtime's monitor holds it),
// so killing the group would leave it running. The watcher runs the
// cleanup (the runtime's forced removal of the container) before it kills
// its group, when the worker dies; a released lifeline does not.
package lifeline

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// watcher ignores the signals porch uses to stop a group gently, so that
// leftovers which outlive a SIGTERM still die with the worker. It reads
// end-of-file when the worker died, runs the cleanup and kills its group;
// a lifeline released on purpose kills the group, watcher included.
const watcher = `trap '' TERM INT HUP; read x; %s; kill -KILL 0`

// Line is one group's lifeline.
type Line struct {
	cmd *exec.Cmd
	w   *os.File
}

// Start starts a lifeline leading a new process group. Start the group's
// processes with SysProcAttr{Setpgid: true, Pgid: l.Pgid()}. cleanup, when
// given, is a command (argv) the watcher runs when the worker dies, before
// it kills the group.
//
// A lifeline without cleanup (a group on the host) is started ahead of
// time: Start hands out a spare watcher, already running, and Release
// starts the next spare in the background, so that starting a watcher is
// on neither a step's way nor beside its own processes' start. A spare
// leads a group of its own, empty until handed out.
func Start(cleanup ...string) (*Line, error) {
	if len(cleanup) > 0 {
		return start(cleanup)
	}
	if l := spares.take(); l != nil {
		return l, nil
	}
	return start(nil)
}

// start starts a watcher now.
func start(cleanup []string) (*Line, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("start a lifeline: %w", err)
	}
	// The write end is close-on-exec (os.Pipe's default), so no child of
	// the worker holds it: only the worker's exit closes it.
	cmd := exec.Command("/bin/sh", "-c", fmt.Sprintf(watcher, shellLine(cleanup)))
	cmd.Stdin = r
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	err = cmd.Start()
	r.Close()
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("start a lifeline: %w", err)
	}
	l := &Line{cmd: cmd, w: w}
	lines.mu.Lock()
	lines.live[l] = struct{}{}
	lines.mu.Unlock()
	return l, nil
}

// lines are the worker's lifelines not released yet, spares included.
var lines = struct {
	mu   sync.Mutex
	live map[*Line]struct{}
}{live: map[*Line]struct{}{}}

// KillAll SIGKILLs at once every group this worker's lifelines lead, as a
// reclaimed spot VM kills its steps: their processes and the watchers,
// which run no cleanup. Processes that porch did not start in a group
// (another part of the program's children) are left alone. The lines
// stay to be released.
func KillAll() {
	lines.mu.Lock()
	defer lines.mu.Unlock()
	for l := range lines.live {
		_ = syscall.Kill(-l.Pgid(), syscall.SIGKILL)
	}
}

// spares holds the worker's spare lifeline.
var spares spare

// spare is at most one watcher started ahead of time.
type spare struct {
	mu       sync.Mutex
	line     *Line
	starting bool
}

// take hands out the spare, nil when there is none or it has died (a
// reclaimed node's worker kills every group it started, the spare's too).
func (s *spare) take() *Line {
	s.mu.Lock()
	l := s.line
	s.line = nil
	s.mu.Unlock()
	if l == nil || l.alive() {
		return l
	}
	l.forget()
	_ = l.cmd.Wait()
	return nil
}

// refill starts a spare when there is none and none is starting.
func (s *spare) refill() {
	s.mu.Lock()
	if s.line != nil || s.starting {
		s.mu.Unlock()
		return
	}
	s.starting = true
	s.mu.Unlock()
	l, err := start(nil)
	s.mu.Lock()
	s.starting = false
	if err == nil {
		s.line = l
	}
	s.mu.Unlock()
}

// alive says the watcher has not exited, without reaping it.
func (l *Line) alive() bool {
	var info unix.Siginfo
	for {
		err := unix.Waitid(unix.P_PID, l.cmd.Process.Pid, &info, unix.WEXITED|unix.WNOHANG|unix.WNOWAIT, nil)
		if err == unix.EINTR {
			continue
		}
		// For a process that has exited the kernel fills in SIGCHLD; for
		// one still running it leaves the (zeroed) info alone.
		return err == nil && info.Signo == 0
	}
}

// Pgid is the id of the group: the watcher's process id.
func (l *Line) Pgid() int { return l.cmd.Process.Pid }

// Release ends the lifeline once the group's work is over: what is left
// of the group (any process that outlived the worker's own stopping, and
// the watcher) is killed before Release returns. The watcher is reaped in
// the background, and the next spare starts then.
func (l *Line) Release() {
	if l == nil {
		return
	}
	// The watcher leads the group until it is reaped, so the id is still
	// the group's. Killing the group here, rather than telling the
	// watcher to, leaves nothing running once Release returns; the
	// watcher dies without running its cleanup, as a released watcher
	// must.
	_ = syscall.Kill(-l.Pgid(), syscall.SIGKILL)
	l.forget()
	go func() {
		_ = l.cmd.Wait()
		spares.refill()
	}()
}

// forget closes the lifeline's end of the pipe and takes it out of the
// registry, before its watcher is reaped: the group's id may then be
// given to a stranger's group, which KillAll must not touch.
func (l *Line) forget() {
	l.w.Close()
	lines.mu.Lock()
	delete(lines.live, l)
	lines.mu.Unlock()
}

// shellLine quotes argv for the watcher's shell; ":" (do nothing) for
// none. Its output is discarded: the worker is gone.
func shellLine(argv []string) string {
	if len(argv) == 0 {
		return ":"
	}
	quoted := make([]string, len(argv))
	for i, a := range argv {
		quoted[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	return strings.Join(quoted, " ") + " >/dev/null 2>&1"
}
