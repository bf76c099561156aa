package lifeline

import (
	"context"
	"os/exec"
	"syscall"
	"time"
)

// Run runs cmd to its end in a group of its own led by a lifeline, as a
// step's processes run: the group dies with the worker however the worker
// dies, and KillAll (a reclaimed spot node) kills it. Work a step starts
// outside its own processes (an image pull or build, a conda file's
// install) runs so: left running by a dead worker, it would write on
// beside the next attempt's.
//
// When ctx ends first the group gets SIGTERM, then SIGKILL after grace,
// and Run returns ctx's error once cmd has exited. Whatever cmd left
// running in its group is killed before Run returns; its output pipes are
// closed at most grace after it exits (exec.Cmd.WaitDelay), when that is
// not set. cmd must not be started, nor set its own process group.
func Run(ctx context.Context, cmd *exec.Cmd, grace time.Duration) error {
	l, err := Start()
	if err != nil {
		return err
	}
	defer l.Release()
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid, cmd.SysProcAttr.Pgid = true, l.Pgid()
	if cmd.WaitDelay == 0 {
		cmd.WaitDelay = grace
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	// The watcher ignores SIGTERM: the group's own processes get it.
	_ = syscall.Kill(-l.Pgid(), syscall.SIGTERM)
	timer := time.NewTimer(grace)
	defer timer.Stop()
	select {
	case <-done:
	case <-timer.C:
		_ = syscall.Kill(-l.Pgid(), syscall.SIGKILL)
		<-done
	}
	return ctx.Err()
}
