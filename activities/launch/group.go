package launch

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/porch-pipelines/porch/activities/affinity"
	"github.com/porch-pipelines/porch/activities/lifeline"
)

// removeTimeout bounds removing a container.
const removeTimeout = time.Minute

// clientGrace is how long a runtime's client pulling or building an
// image may take to exit after SIGTERM, when its step is stopped, before
// SIGKILL.
const clientGrace = 10 * time.Second

// Group is one process group of a step, led by its lifeline: a command
// and what it starts, a rank, an entry-script process. When its processes
// run in a container, the container dies with the worker too, and
// stopping the group stops the container.
type Group struct {
	rt   Runtime
	line *lifeline.Line
	// container is the group's container, "" when its processes run on
	// the host.
	container string
}

// NewGroup starts the lifeline of a new group; container names the
// container its processes run in, "" for the host.
func (r Runtime) NewGroup(container string) (*Group, error) {
	var cleanup []string
	if container != "" {
		cleanup = r.Cleanup(container)
	}
	line, err := lifeline.Start(cleanup...)
	if err != nil {
		return nil, err
	}
	return &Group{rt: r, line: line, container: container}, nil
}

// Pgid is the group's id.
func (g *Group) Pgid() int { return g.line.Pgid() }

// Container is the group's container, "" on the host.
func (g *Group) Container() string { return g.container }

// Host is argv run on the host in the group, with env as its whole
// environment.
func (g *Group) Host(argv []string, dir string, env []string) *exec.Cmd {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir, cmd.Env = dir, env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pgid: g.Pgid()}
	return cmd
}

// Run is argv run in the group's container c (c.Name is the group's): the
// runtime's client runs in the group, attached to the container.
func (g *Group) Run(c Container, argv []string) *exec.Cmd {
	cmd := g.rt.command(g.rt.RunArgs(c, argv)...)
	cmd.Env = clientEnv(c.Env)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pgid: g.Pgid()}
	return cmd
}

// Exec is argv run in the running container name by the runtime's
// client, which runs in the group. The process in the container is not
// the group's: stop it from inside the container.
func (g *Group) Exec(name, dir string, env []string, argv []string) *exec.Cmd {
	cmd := g.rt.command(g.rt.ExecArgs(name, dir, env, argv)...)
	cmd.Env = clientEnv(env)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pgid: g.Pgid()}
	return cmd
}

// Start starts cmd (made by Host, Run or Exec) on cpus, none meaning any.
// A container's own cores are Container.CPUs.
func (g *Group) Start(cmd *exec.Cmd, cpus []int) error {
	if g.container != "" {
		cpus = nil
	}
	return affinity.Start(cmd, cpus)
}

// Signal sends sig to the group. The runtime's client passes SIGTERM on
// to the container's init, which passes it on to the step's process;
// SIGKILL cannot be passed on, so the container is removed first.
func (g *Group) Signal(sig syscall.Signal) {
	if sig == syscall.SIGKILL && g.container != "" {
		g.Remove()
	}
	_ = syscall.Kill(-g.Pgid(), sig)
}

// Remove removes the group's container at once, if it has one and it is
// still there.
func (g *Group) Remove() {
	if g.container == "" {
		return
	}
	_ = g.rt.Remove(g.container)
}

// Remove removes container name at once, running or not.
func (r Runtime) Remove(name string) error {
	ctx, cancel := context.WithTimeout(context.Background(), removeTimeout)
	defer cancel()
	out, err := exec.CommandContext(ctx, r.Bin, r.RemoveArgs(name)...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s rm %s: %s", r.Kind, name, lastLines(string(out), 2, err))
	}
	return nil
}

// Release ends the group once its work is over: what is left of it on the
// host is killed before Release returns. The container, if any, is left to
// its --rm or to Remove.
func (g *Group) Release() {
	if g == nil {
		return
	}
	g.line.Release()
}

// InitPID is the host's pid of container name's init.
func (r Runtime) InitPID(ctx context.Context, name string) (int, error) {
	out, err := exec.CommandContext(ctx, r.Bin, "inspect", "--format", "{{.State.Pid}}", name).Output()
	if err != nil {
		return 0, fmt.Errorf("%s inspect %s: %w", r.Kind, name, err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(out)))
	if err != nil || pid <= 0 {
		return 0, fmt.Errorf("%s inspect %s: no running process (%q)", r.Kind, name, strings.TrimSpace(string(out)))
	}
	return pid, nil
}

// NamespacePIDs are the processes, as the host numbers them, in the pid
// namespace of process pid: a container's, whose processes the runtime's
// exec starts outside its init's tree. None when it cannot be read.
func NamespacePIDs(pid int) []int {
	ns, err := os.Readlink("/proc/" + strconv.Itoa(pid) + "/ns/pid")
	if err != nil {
		return nil
	}
	all, err := PIDs()
	if err != nil {
		return nil
	}
	var pids []int
	for _, p := range all {
		if l, err := os.Readlink("/proc/" + strconv.Itoa(p) + "/ns/pid"); err == nil && l == ns {
			pids = append(pids, p)
		}
	}
	return pids
}

// PIDs are the ids of the host's processes, from one read of /proc.
func PIDs() ([]int, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	pids := make([]int, 0, len(entries))
	for _, e := range entries {
		if pid, err := strconv.Atoi(e.Name()); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids, nil
}
