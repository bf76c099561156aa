// Package testprocess runs the storage servers tests talk to (Azurite, MinIO,
// versitygw) as child processes: started with their output kept, dying
// with the test process, waited for until they serve requests, and stopped
// with their data removed.
package testprocess

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"sync"
	"syscall"
	"time"
)

// Process is a running server process.
type Process struct {
	name   string
	cmd    *exec.Cmd
	dir    string
	exited chan struct{}
	log    bytes.Buffer
}

// Start runs cmd, the server name whose data is in dir, and waits until
// live says it serves requests at addr: it fails when the server exits
// first or a minute passes, with the server's output, and then removes dir.
func Start(name, addr, dir string, cmd *exec.Cmd, live func() bool) (*Process, error) {
	p := &Process{name: name, cmd: cmd, dir: dir, exited: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = &p.log, &p.log
	// The server dies with the test process even when TestMain does not
	// stop it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := startOnLastingThread(cmd); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("run %s: %w", cmd.Path, err)
	}
	go func() {
		_ = cmd.Wait()
		close(p.exited)
	}()
	if err := p.waitLive(addr, live); err != nil {
		p.Stop()
		return nil, fmt.Errorf("%w; its output:\n%s", err, p.log.String())
	}
	return p, nil
}

// waitLive asks live every 50 ms until it says yes, the process exits or a
// minute passes.
func (p *Process) waitLive(addr string, live func() bool) error {
	deadline := time.After(time.Minute)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for !live() {
		select {
		case <-p.exited:
			return fmt.Errorf("%s exited before it served requests", p.name)
		case <-deadline:
			return fmt.Errorf("%s at %s did not serve requests within a minute", p.name, addr)
		case <-tick.C:
		}
	}
	return nil
}

// Stop kills the server, waits for it to exit and removes its data.
func (p *Process) Stop() {
	_ = p.cmd.Process.Kill()
	<-p.exited
	os.RemoveAll(p.dir)
}

// starts are the servers to start on the lasting thread.
var (
	starts     = make(chan startRequest)
	startsOnce sync.Once
)

type startRequest struct {
	cmd  *exec.Cmd
	done chan error
}

// startOnLastingThread starts cmd from a thread that lives as long as the
// test process. A parent-death signal fires when the thread that forked
// the child ends, not the process, and a goroutine that ends locked to its
// thread ends the thread: started from any thread, the server could die
// mid-test.
func startOnLastingThread(cmd *exec.Cmd) error {
	startsOnce.Do(func() {
		go func() {
			runtime.LockOSThread()
			for r := range starts {
				r.done <- r.cmd.Start()
			}
		}()
	})
	done := make(chan error, 1)
	starts <- startRequest{cmd: cmd, done: done}
	return <-done
}
