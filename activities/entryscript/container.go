package entryscript

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/porch-pipelines/porch/activities/launch"
)

// Container runs the entry-script processes in a running container (one
// per instance, started by the caller) instead of on the host: each
// process is the runtime's exec of the driver in it. The container must
// see the code folder, the logs, the driver's folder and FifoDir at their
// host paths.
type Container struct {
	Runtime launch.Runtime
	// Name is the running container's name.
	Name string
	// FifoDir is a folder the host and the container share, where each
	// process's two pipes are named pipes (a runtime's exec passes no
	// other file descriptors) and its pid inside the container is kept.
	FifoDir string
}

// fifoSeq numbers the named pipes of one worker.
var fifoSeq atomic.Int64

// inContainer is how one driver process reaches the container: its pipes'
// names and its pid file.
type inContainer struct {
	c           *Container
	req, ev     string
	pidFile     string
	signalLimit time.Duration
}

// containerPipes makes the named pipes of a new process and opens porch's
// ends. Both are opened read-write: an open of one end of a named pipe
// waits for the other, which the driver opens only once it runs.
func (c *Container) pipes(slot string) (*inContainer, *os.File, *os.File, error) {
	if err := os.MkdirAll(c.FifoDir, 0o755); err != nil {
		return nil, nil, nil, err
	}
	base := filepath.Join(c.FifoDir, slot+"-"+strconv.FormatInt(fifoSeq.Add(1), 10))
	ic := &inContainer{c: c, req: base + ".req", ev: base + ".ev", pidFile: base + ".pid", signalLimit: 30 * time.Second}
	for _, p := range []string{ic.req, ic.ev} {
		_ = os.Remove(p)
		if err := unix.Mkfifo(p, 0o600); err != nil {
			return nil, nil, nil, fmt.Errorf("make the entry script's pipe %s: %w", p, err)
		}
	}
	req, err := os.OpenFile(ic.req, os.O_RDWR, 0)
	if err != nil {
		return nil, nil, nil, err
	}
	ev, err := os.OpenFile(ic.ev, os.O_RDWR, 0)
	if err != nil {
		req.Close()
		return nil, nil, nil, err
	}
	return ic, req, ev, nil
}

// argv runs the driver in the container with its pipes as file
// descriptors 3 and 4, as on the host, after writing its pid.
func (ic *inContainer) argv(python, driver, arg string) []string {
	script := `echo $$ > "$0"; exec "$1" "$2" "$3" 3<"$4" 4>"$5"`
	return []string{"/bin/sh", "-c", script, ic.pidFile, python, driver, arg, ic.req, ic.ev}
}

// signal sends sig to the driver inside the container: the runtime's
// client, which porch's group holds, does not pass SIGKILL on.
func (ic *inContainer) signal(sig syscall.Signal) {
	b, err := os.ReadFile(ic.pidFile)
	pid := strings.TrimSpace(string(b))
	if err != nil || pid == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), ic.signalLimit)
	defer cancel()
	name := strings.TrimPrefix(unix.SignalName(sig), "SIG")
	_ = exec.CommandContext(ctx, ic.c.Runtime.Bin, ic.c.Runtime.ExecArgs(ic.c.Name, "", nil,
		[]string{"/bin/sh", "-c", `kill -s "$0" "$1"`, name, pid})...).Run()
}

// remove removes the process's pipes and pid file.
func (ic *inContainer) remove() {
	for _, p := range []string{ic.req, ic.ev, ic.pidFile} {
		_ = os.Remove(p)
	}
}
