// Package lifeline ties the life of a process group porch starts to the
// life of the worker that started it: when the worker dies, however it
// dies (SIGKILL included), the whole group dies within milliseconds.
//
// A parent-death signal is not enough: it reaches only the direct child
// (the shell, not what the shell starts), and Linux sends it when the
// thread that forked exits, which porch's pinned starts do on purpose. A
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
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
)

// watcher ignores the signals porch uses to stop a group gently, so that
// leftovers which outlive a SIGTERM still die with the worker. It reads
// "done" from a lifeline released on purpose, end-of-file when the worker
// died; only then does it run the cleanup.
const watcher = `trap '' TERM INT HUP; read x; [ "$x" = done ] || %s; kill -KILL 0`

// released is what Release writes to the watcher.
const released = "done\n"

// Line is one group's lifeline.
type Line struct {
	cmd *exec.Cmd
	w   *os.File
}

// Start starts a lifeline leading a new process group. Start the group's
// processes with SysProcAttr{Setpgid: true, Pgid: l.Pgid()}. cleanup, when
// given, is a command (argv) the watcher runs when the worker dies, before
// it kills the group.
func Start(cleanup ...string) (*Line, error) {
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
	return &Line{cmd: cmd, w: w}, nil
}

// Pgid is the id of the group: the watcher's process id.
func (l *Line) Pgid() int { return l.cmd.Process.Pid }

// Release ends the lifeline once the group's work is over: the watcher
// kills what is left of its group (itself, and any process that
// outlived the worker's own stopping) and is reaped.
func (l *Line) Release() error {
	if l == nil {
		return nil
	}
	_, _ = l.w.WriteString(released)
	l.w.Close()
	err := l.cmd.Wait()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		// The watcher dies of its own SIGKILL.
		return nil
	}
	return err
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
