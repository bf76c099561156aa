package entryscript

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/porch-pipelines/porch/activities/launch"
	"github.com/porch-pipelines/porch/activities/redact"
)

// process is one live driver process and its two pipes.
type process struct {
	slot string
	pid  int
	// pgid is the process's group, led by its lifeline.
	pgid  int
	grace time.Duration
	req   *os.File // fd 3 of the child: requests
	ev    *os.File // fd 4 of the child: events
	evr   *bufio.Reader
	// mu is held while signalling the group and while the monitor marks the
	// leader dead, so porch never signals a process group id that was
	// reaped (and could be reused).
	mu     sync.Mutex
	dead   atomic.Bool
	exited chan struct{}
	// state is set before exited is closed.
	state *os.ProcessState
	// stderrPath and stderrStart locate this process's part of its slot's
	// stderr log, for crash reports.
	stderrPath  string
	stderrStart int64
	// inside is set for a driver in a container, which signals reach
	// only from inside it.
	inside *inContainer
}

// request is one line sent to the driver.
type request struct {
	Op         string          `json:"op"`
	ID         int             `json:"id"`
	Attempt    int             `json:"attempt,omitempty"`
	Files      []string        `json:"files,omitempty"`
	Table      json.RawMessage `json:"table,omitempty"`
	ResultPath string          `json:"result_path,omitempty"`
}

// event is one line from the driver.
type event struct {
	Ev        string  `json:"ev"`
	ID        int     `json:"id"`
	Items     int     `json:"items"`
	Returned  int     `json:"returned"`
	Load      float64 `json:"load"`
	Run       float64 `json:"run"`
	Kind      string  `json:"kind"`
	Error     string  `json:"error"`
	Traceback string  `json:"traceback"`
	Format    string  `json:"format"`
}

// driverConfig is the driver's one argument.
type driverConfig struct {
	Dir          string   `json:"dir"`
	Script       string   `json:"script"`
	Args         []string `json:"args"`
	EntryLog     string   `json:"entry_log,omitempty"`
	UserLogDir   string   `json:"user_log_dir,omitempty"`
	OutputDir    string   `json:"output_dir,omitempty"`
	Node         string   `json:"node"`
	Process      string   `json:"process"`
	LoggingLevel string   `json:"logging_level,omitempty"`
	// SecretVars name the variables whose values the entry-script logger
	// blanks out.
	SecretVars []string `json:"secret_vars,omitempty"`
	Tabular    bool     `json:"tabular,omitempty"`
}

// spawn starts a driver process for slot; it does not wait for init().
// What it prints goes to its logs with secrets blanked out.
func spawn(o *resolved, slot string, secrets []string) (*process, error) {
	stdoutLog, stderrLog, err := o.openLogs(slot)
	if err != nil {
		return nil, err
	}
	stdout, stderr, err := redactTo(stdoutLog, stderrLog, secrets)
	if err != nil {
		return nil, err
	}
	defer stdout.Close()
	defer stderr.Close()
	cfg := o.driverConfig(slot)
	arg, err := json.Marshal(cfg)
	if err != nil {
		return nil, err
	}
	// The process dies with the worker, even by SIGKILL: a mini-batch must
	// not go on in a process whose worker is gone while its retry runs.
	// Its lifeline leads its group; in a container, the container's own
	// lifeline (its caller's) removes it.
	grp, reqW, evR, ic, cmd, err := o.command(slot, string(arg))
	if err != nil {
		return nil, err
	}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	err = grp.Start(cmd, o.CPUs)
	for _, f := range cmd.ExtraFiles {
		f.Close()
	}
	if err != nil {
		grp.Release()
		reqW.Close()
		evR.Close()
		return nil, &BatchError{Kind: KindInitFailed, Process: slot, Message: fmt.Sprintf(
			"cannot start the entry script's Python %q: %v; install it or choose another interpreter", o.python, err)}
	}
	pr := &process{
		slot: slot, pid: cmd.Process.Pid, pgid: grp.Pgid(), grace: o.grace,
		req: reqW, ev: evR, evr: bufio.NewReaderSize(evR, 16<<10),
		exited: make(chan struct{}), stderrPath: stderrLog.Name(), inside: ic,
	}
	if fi, err := stderrLog.Stat(); err == nil {
		pr.stderrStart = fi.Size()
	}
	go pr.monitor(cmd, grp)
	return pr, nil
}

// command is the driver process of slot, not started, in a group of its
// own, with porch's ends of its two pipes: on the host with the pipes as
// its file descriptors 3 and 4, or in the container through named pipes.
func (o *resolved) command(slot, arg string) (*launch.Group, *os.File, *os.File, *inContainer, *exec.Cmd, error) {
	rt := launch.Runtime{}
	if o.Container != nil {
		rt = o.Container.Runtime
	}
	grp, err := rt.NewGroup("")
	if err != nil {
		return nil, nil, nil, nil, nil, err
	}
	if c := o.Container; c != nil {
		ic, reqW, evR, err := c.pipes(slot)
		if err != nil {
			grp.Release()
			return nil, nil, nil, nil, nil, err
		}
		cmd := grp.Exec(c.Name, o.dir, o.env, ic.argv(o.python, o.driver, arg))
		return grp, reqW, evR, ic, cmd, nil
	}
	reqR, reqW, err := os.Pipe()
	if err != nil {
		grp.Release()
		return nil, nil, nil, nil, nil, err
	}
	evR, evW, err := os.Pipe()
	if err != nil {
		reqR.Close()
		reqW.Close()
		grp.Release()
		return nil, nil, nil, nil, nil, err
	}
	cmd := grp.Host([]string{o.python, o.driver, arg}, o.dir, o.env)
	cmd.ExtraFiles = []*os.File{reqR, evW}
	return grp, reqW, evR, nil, cmd, nil
}

// monitor waits for the driver to exit, kills what is left of its group
// (its lifeline too), reaps it and wakes any reader.
func (pr *process) monitor(cmd *exec.Cmd, line *launch.Group) {
	waitExited(pr.pid)
	pr.mu.Lock()
	pr.dead.Store(true)
	// The lifeline leads the group until released, so the id is ours.
	_ = syscall.Kill(-pr.pgid, syscall.SIGKILL)
	pr.mu.Unlock()
	pr.wake()
	if pr.inside != nil {
		// The runtime's client ends with the driver; signal killed the
		// driver first when porch stopped it.
		pr.inside.remove()
	}
	line.Release()
	_ = cmd.Wait()
	pr.state = cmd.ProcessState
	close(pr.exited)
}

// release closes porch's ends of the pipes of a process that has exited.
func (pr *process) release() {
	<-pr.exited
	pr.req.Close()
	pr.ev.Close()
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

// wake makes a blocked read or write on the pipes return now.
func (pr *process) wake() {
	now := time.Now()
	_ = pr.ev.SetReadDeadline(now)
	_ = pr.req.SetWriteDeadline(now)
}

// signal sends sig to the process group unless the leader is gone.
func (pr *process) signal(sig syscall.Signal) {
	pr.mu.Lock()
	if !pr.dead.Load() {
		if pr.inside != nil {
			pr.inside.signal(sig)
		}
		_ = syscall.Kill(-pr.pgid, sig)
	}
	pr.mu.Unlock()
}

// kill stops the process group (SIGTERM, SIGKILL after grace) and returns
// once the leader is reaped.
func (pr *process) kill(grace time.Duration) {
	select {
	case <-pr.exited:
		return
	default:
	}
	if grace > 0 {
		pr.signal(syscall.SIGTERM)
		t := time.NewTimer(grace)
		defer t.Stop()
		select {
		case <-pr.exited:
			return
		case <-t.C:
		}
	}
	pr.signal(syscall.SIGKILL)
	<-pr.exited
}

// limit is a deadline and the error its expiry means.
type limit struct {
	at      time.Time
	kind    string
	message string
}

func newLimit(d time.Duration, kind, message string) limit {
	l := limit{kind: kind, message: message}
	if d > 0 {
		l.at = time.Now().Add(d)
	}
	return l
}

// drainWait bounds reading the events a dead process left in its pipe.
const drainWait = time.Second

// errStopped is a read or write cut short by ctx or by the process's death.
var errStopped = errors.New("stopped")

// send writes one request line, bounded by lim.
func (pr *process) send(ctx context.Context, line []byte, lim limit) (*limit, error) {
	_ = pr.req.SetWriteDeadline(lim.at)
	if ctx.Err() != nil || pr.dead.Load() {
		return nil, errStopped
	}
	_, err := pr.req.Write(line)
	if errors.Is(err, os.ErrDeadlineExceeded) && ctx.Err() == nil && !pr.dead.Load() {
		return &lim, err
	}
	return nil, err
}

// next reads the driver's next event, bounded by the earliest of lims
// (zero ones do not bound). When one expires it is returned.
func (pr *process) next(ctx context.Context, lims ...limit) (event, *limit, error) {
	var first *limit
	for i := range lims {
		if !lims[i].at.IsZero() && (first == nil || lims[i].at.Before(first.at)) {
			first = &lims[i]
		}
	}
	var dl time.Time
	if first != nil {
		dl = first.at
	}
	_ = pr.ev.SetReadDeadline(dl)
	// Checked after setting the deadline: wake sets its own after ctx is
	// done, so a wake cannot be lost between the two.
	if ctx.Err() != nil {
		return event{}, nil, errStopped
	}
	line, err := pr.evr.ReadBytes('\n')
	if err != nil && pr.dead.Load() && ctx.Err() == nil {
		// The process is gone, but its last events may still be in the
		// pipe: read them (EOF comes at once when the group is gone).
		_ = pr.ev.SetReadDeadline(time.Now().Add(drainWait))
		var rest []byte
		rest, err = pr.evr.ReadBytes('\n')
		line = append(line, rest...)
	}
	if err != nil {
		if errors.Is(err, os.ErrDeadlineExceeded) && ctx.Err() == nil && !pr.dead.Load() {
			return event{}, first, err
		}
		return event{}, nil, err
	}
	var ev event
	if err := json.Unmarshal(line, &ev); err != nil {
		return event{}, nil, fmt.Errorf("unreadable event from the driver: %v", err)
	}
	return ev, nil, nil
}

// exitText says how the process ended; it waits for the process.
func (pr *process) exitText() string {
	<-pr.exited
	if pr.state == nil {
		return "no exit status"
	}
	if ws, ok := pr.state.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return fmt.Sprintf("killed by signal %s", unix.SignalName(ws.Signal()))
	}
	return fmt.Sprintf("exit status %d", pr.state.ExitCode())
}

// stderrTail returns the last lines this process wrote to stderr.
func (pr *process) stderrTail() string {
	if pr.stderrPath == "" || pr.stderrPath == os.DevNull {
		return ""
	}
	return tailFile(pr.stderrPath, pr.stderrStart, tailLines, 16<<10)
}

// logPaths are a slot's log files in Azure's layout; all "" without LogDir.
func (o *resolved) logPaths(slot string) (stdout, stderr, entryLog string) {
	if o.logDir == "" {
		return "", "", ""
	}
	user := filepath.Join(o.logDir, "user")
	return filepath.Join(user, "stdout", o.node, slot+".txt"),
		filepath.Join(user, "stderr", o.node, slot+".txt"),
		filepath.Join(user, "entry_script_log", o.node, slot+".log.txt")
}

// openLogs opens a slot's stdout and stderr logs for appending (both
// os.DevNull without LogDir) and creates the entry-script log's folder.
func (o *resolved) openLogs(slot string) (stdout, stderr *os.File, err error) {
	outPath, errPath, entryLog := o.logPaths(slot)
	if outPath == "" {
		outPath, errPath = os.DevNull, os.DevNull
	} else {
		for _, p := range []string{outPath, errPath, entryLog} {
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				return nil, nil, fmt.Errorf("create the step's log folder: %w", err)
			}
		}
	}
	flags := os.O_WRONLY | os.O_CREATE | os.O_APPEND
	if stdout, err = os.OpenFile(outPath, flags, 0o644); err != nil {
		return nil, nil, fmt.Errorf("open the entry script's stdout log: %w", err)
	}
	if stderr, err = os.OpenFile(errPath, flags, 0o644); err != nil {
		stdout.Close()
		return nil, nil, fmt.Errorf("open the entry script's stderr log: %w", err)
	}
	return stdout, stderr, nil
}

func (o *resolved) driverConfig(slot string) driverConfig {
	_, _, entryLog := o.logPaths(slot)
	cfg := driverConfig{
		Dir: o.dir, Script: o.script, Args: o.Args, EntryLog: entryLog,
		OutputDir: o.OutputDir, Node: o.node, Process: slot,
		LoggingLevel: o.LoggingLevel, Tabular: o.Tabular, SecretVars: o.SecretVars,
	}
	if o.logDir != "" {
		cfg.UserLogDir = filepath.Join(o.logDir, "user")
	}
	if cfg.Args == nil {
		cfg.Args = []string{}
	}
	return cfg
}

// redactTo returns what a process should write its stdout and stderr to:
// the log files themselves, or, when there are secrets to keep out of
// them, pipes copied into the logs with the secrets blanked out. The
// copies close the logs at the pipes' end; the caller closes what it is
// given once the process has them.
func redactTo(stdoutLog, stderrLog *os.File, secrets []string) (stdout, stderr *os.File, err error) {
	if len(secrets) == 0 {
		return stdoutLog, stderrLog, nil
	}
	var ends []*os.File
	for _, log := range []*os.File{stdoutLog, stderrLog} {
		r, w, err := os.Pipe()
		if err != nil {
			for _, e := range ends {
				e.Close()
			}
			stdoutLog.Close()
			stderrLog.Close()
			return nil, nil, fmt.Errorf("create output pipe: %w", err)
		}
		ends = append(ends, w)
		go func(r, log *os.File) {
			red := redact.NewWriter(log, secrets)
			_, _ = io.Copy(red, r)
			_ = red.Close()
			r.Close()
			log.Close()
		}(r, log)
	}
	return ends[0], ends[1], nil
}
