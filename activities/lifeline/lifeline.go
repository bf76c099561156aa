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
package lifeline

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"
)

// watcher ignores the signals porch uses to stop a group gently, so that
// leftovers which outlive a SIGTERM still die with the worker.
const watcher = "trap '' TERM INT HUP; read _; kill -KILL 0"

// Line is one group's lifeline.
type Line struct {
	cmd *exec.Cmd
	w   *os.File
}

// Start starts a lifeline leading a new process group. Start the group's
// processes with SysProcAttr{Setpgid: true, Pgid: l.Pgid()}.
func Start() (*Line, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("start a lifeline: %w", err)
	}
	// The write end is close-on-exec (os.Pipe's default), so no child of
	// the worker holds it: only the worker's exit closes it.
	cmd := exec.Command("/bin/sh", "-c", watcher)
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
	l.w.Close()
	err := l.cmd.Wait()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		// The watcher dies of its own SIGKILL.
		return nil
	}
	return err
}
