package fleet

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"github.com/porch-pipelines/porch/worker"
)

// stopTimeout is how long a stopping node has to hand back its work and
// exit after SIGTERM (a worker gives its steps' processes 30 s to stop)
// before it is killed.
const stopTimeout = 40 * time.Second

// node is one `porch worker` process of a compute's fleet.
type node struct {
	name    string
	cmd     *exec.Cmd
	status  string // its status file
	log     string // its output
	started time.Time
	// stopping is when SIGTERM was sent; zero while it serves.
	stopping time.Time
	// exited is closed when the process has exited; err is then its end.
	exited chan struct{}
	err    error
}

// startNode starts a worker process serving one compute, one step at a
// time, that keeps a status file. Its output goes to a log file of its
// own. It runs in a process group of its own, so a Ctrl-C in porch dev's
// terminal reaches the fleet, which stops its nodes in order; should porch
// dev die, the kernel sends the node SIGTERM (Pdeathsig).
func startNode(o *Options, compute, name string) (*node, error) {
	dir := filepath.Join(o.Home, "fleet")
	n := &node{name: name, status: filepath.Join(dir, name+".json"), log: filepath.Join(dir, name+".log"),
		exited: make(chan struct{})}
	// A status file left by an earlier node of this name would say idle.
	if err := os.Remove(n.status); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	logf, err := os.OpenFile(n.log, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	n.cmd = exec.Command(o.Executable, "worker", "--address", o.Address, "--namespace", o.Namespace,
		"--compute", compute, "--node", name, "--slots", "1", "--status-file", n.status)
	n.cmd.Env = append(os.Environ(), "PORCH_HOME="+o.Home)
	if o.Runtime != "" {
		n.cmd.Env = append(n.cmd.Env, "PORCH_RUNTIME="+o.Runtime)
	}
	n.cmd.Stdout, n.cmd.Stderr = logf, logf
	n.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
	if err := n.cmd.Start(); err != nil {
		return nil, err
	}
	n.started = time.Now()
	go func() {
		n.err = n.cmd.Wait()
		os.Remove(n.status)
		close(n.exited)
	}()
	return n, nil
}

// state is what the node's status file says, and whether it has written
// one. A node that has not has not started polling yet, so it runs
// nothing and has been idle since it started.
func (n *node) state() (NodeState, bool) {
	st, err := worker.ReadNodeStatus(n.status)
	if err != nil || st.PID != n.cmd.Process.Pid {
		return NodeState{Name: n.name, IdleSince: n.started}, false
	}
	return NodeState{Name: n.name, Busy: st.Running > 0, IdleSince: st.IdleSince}, true
}

// done says whether the process has exited.
func (n *node) done() bool {
	select {
	case <-n.exited:
		return true
	default:
		return false
	}
}

// stop asks the node to stop (SIGTERM): it stops polling and hands back
// what it runs.
func (n *node) stop() {
	if n.stopping.IsZero() {
		n.stopping = time.Now()
		n.cmd.Process.Signal(syscall.SIGTERM)
	}
}

// kill kills a node that did not stop within stopTimeout, with its
// process group.
func (n *node) kill() {
	syscall.Kill(-n.cmd.Process.Pid, syscall.SIGKILL)
}

// exitText says how a node ended, for the scale log.
func (n *node) exitText() string {
	if n.err == nil {
		return "exited"
	}
	return fmt.Sprintf("exited: %v (log: %s)", n.err, n.log)
}
