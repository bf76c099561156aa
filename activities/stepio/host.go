package stepio

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/porch-pipelines/porch/activities/codesnapshot"
	"github.com/porch-pipelines/porch/activities/launch"
	"github.com/porch-pipelines/porch/activities/objectstore/lazyfs"
	"github.com/porch-pipelines/porch/activities/webdata"
	"github.com/porch-pipelines/porch/compiler/plan"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
)

// Host is a worker's step I/O, shared by the activities of every step
// kind: its porch home and working folders, its datastores (local folders
// and object stores) and the code snapshots fetched from them.
type Host struct {
	// Home is the porch home folder (the CLI resolves PORCH_HOME or
	// ~/.porch); datastores and working folders live under it.
	Home string
	// HeartbeatInterval is how often a running step heartbeats; 0 means
	// 5 seconds.
	HeartbeatInterval time.Duration
	// KillGrace is how long a stopped process may take to exit after
	// SIGTERM before porch sends SIGKILL; 0 means 5 seconds.
	KillGrace time.Duration
	// Node names this worker in steps' logs and its own task queue; ""
	// means <hostname>-<pid>.
	Node string
	// DisableMounts makes ro_mount inputs on s3 datastores download into
	// the working folder, as where FUSE is not available, instead of
	// mounting them.
	DisableMounts bool
	// Datastores reads the registered datastores (the server's catalogue);
	// nil means none: every datastore is a folder under Home. A worker
	// re-reads them every few seconds.
	Datastores func(ctx context.Context) ([]plan.Datastore, error)
	// Interpreter is the worker's configured Python (porch worker
	// --python, PORCH_PYTHON); "" means python3 on PATH. Python says
	// what every step runs as python and python3.
	Interpreter string
	// Transport carries this worker's requests to object stores; nil is
	// the default. Tests count requests with it.
	Transport http.RoundTripper
	// Runtime is where steps with an environment run: the host (the
	// zero Runtime), or containers through podman or docker.
	Runtime launch.Runtime

	deadMounts sync.Once
	stores     datastores
	objects    objectStores
	// snapshots are the code snapshots fetched from object storage, under
	// Home/cache/code.
	snapshots     codesnapshot.Cache
	snapshotsOnce sync.Once
	python        stepPython
	// web is the cache of data fetched from web URLs, under Home/cache/web.
	web     *webdata.Cache
	webOnce sync.Once
	rt      runtime
}

// DetachDeadMounts detaches, once per worker, the inputs a dead worker of
// this home mounted for steps that may never run here again.
func (h *Host) DetachDeadMounts() {
	h.deadMounts.Do(func() { _, _ = lazyfs.DetachDead(filepath.Join(h.Home, "work")) })
}

// BeatInterval is how often a running step heartbeats.
func (h *Host) BeatInterval() time.Duration {
	if h.HeartbeatInterval > 0 {
		return h.HeartbeatInterval
	}
	return 5 * time.Second
}

// StopGrace is how long a stopped process may take to exit after SIGTERM.
func (h *Host) StopGrace() time.Duration {
	if h.KillGrace > 0 {
		return h.KillGrace
	}
	return 5 * time.Second
}

// Invalid is a user's mistake: never retried, the message says what to
// fix.
func Invalid(format string, args ...any) error {
	return temporal.NewNonRetryableApplicationError(fmt.Sprintf(format, args...), InvalidStepType, nil)
}

// Beat is a heartbeat's details as Temporal's UI and CLI show them for a
// pending activity: the phase a step is in and, as the phase has them, how
// much its processes have logged, the node it holds, the mini-batch it is
// at.
type Beat struct {
	Phase       string `json:"phase"`
	LoggedBytes int64  `json:"logged_bytes,omitempty"`
	Node        string `json:"node,omitempty"`
	MiniBatch   int    `json:"mini_batch,omitempty"`
}

// BeatWhile records a heartbeat with details() every heartbeat interval
// until the returned function is called.
func (h *Host) BeatWhile(ctx context.Context, details func() any) (stop func()) {
	return h.BeatEvery(ctx, h.BeatInterval(), details)
}

// BeatEvery is BeatWhile with a heartbeat every interval.
func (h *Host) BeatEvery(ctx context.Context, interval time.Duration, details func() any) (stop func()) {
	if !activity.IsActivity(ctx) {
		return func() {}
	}
	done := make(chan struct{})
	finished := make(chan struct{})
	kept, _ := ctx.Value(beatsKey{}).(*Beats)
	go func() {
		defer close(finished)
		tick := time.NewTicker(interval)
		defer tick.Stop()
		for {
			select {
			case <-tick.C:
				d := details()
				kept.keep(d)
				activity.RecordHeartbeat(ctx, d)
			case <-done:
				return
			}
		}
	}()
	return func() {
		close(done)
		<-finished
	}
}

// Beats keeps the details of the last heartbeat a step's work recorded,
// for work that outlives the activity it started in (a command moved out
// of a local activity, whose heartbeats go nowhere): the activity that
// follows the work heartbeats with them.
type Beats struct {
	mu   sync.Mutex
	last any
}

type beatsKey struct{}

// WithBeats makes BeatWhile and BeatEvery under ctx keep their details in b.
func WithBeats(ctx context.Context, b *Beats) context.Context {
	return context.WithValue(ctx, beatsKey{}, b)
}

// Latest are the details of the last heartbeat; nil before the first.
func (b *Beats) Latest() any {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.last
}

func (b *Beats) keep(details any) {
	if b == nil {
		return
	}
	b.mu.Lock()
	b.last = details
	b.mu.Unlock()
}

// NodeName names this worker in parallel steps' logs and in its own task
// queue: the host name and the process id, unless Node says
// otherwise.
func (h *Host) NodeName() string {
	if h.Node != "" {
		return h.Node
	}
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "node"
	}
	return host + "-" + strconv.Itoa(os.Getpid())
}

// InvalidStepType is the application error type of a step that cannot run as
// written (a missing input, a bad path, an unknown distribution): a user's
// mistake, never retried. The message says what to fix.
const InvalidStepType = "InvalidStep"

// OutputLocation says where an output landed.
type OutputLocation struct {
	Name string `json:"name"`
	URI  string `json:"uri"`
	Path string `json:"path"`
}

// FreePorts finds n distinct free loopback ports. All listeners stay open
// until every port is found, so the ports differ.
func FreePorts(n int) ([]int, error) {
	ports := make([]int, 0, n)
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("find a free port for the distribution: %w", err)
		}
		defer l.Close()
		addr, ok := l.Addr().(*net.TCPAddr)
		if !ok {
			return nil, fmt.Errorf("find a free port for the distribution: unexpected address %v", l.Addr())
		}
		ports = append(ports, addr.Port)
	}
	return ports, nil
}
