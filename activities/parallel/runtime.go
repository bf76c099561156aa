package parallel

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/porch-pipelines/porch/activities/entryscript"
	"github.com/porch-pipelines/porch/activities/minibatch"
	"github.com/porch-pipelines/porch/activities/stepio"
)

// idleShutdown is how long a step's entry-script processes may sit unused
// on a worker before porch calls their shutdown() and stops them: a step
// whose last mini-batch ran elsewhere ends this way.
const idleShutdown = 30 * time.Second

// parallelRuntime is one parallel step on this worker: its settings, its
// manifest and its entry-script processes, kept across mini-batches.
type parallelRuntime struct {
	a        *Activities
	ref      ParallelStepRef
	folders  parallelFolders
	spec     parallelSpec
	manifest *minibatch.Manifest
	pool     *entryscript.Pool
	node     string
	appendTo bool
	// work is this node's working folder for the step.
	work string
	// outputs are the step's outputs on object storage, staged in work.
	outputs *objectOutputs
	// groups are the groups' done records this worker has read.
	groups groupRecords
	// releaseDevices gives back the cores and GPUs the step's processes
	// hold on this node.
	releaseDevices func()
	// instance is the container the entry scripts run in, nil on the
	// host.
	instance *instance

	// useMu guards users (mini-batches running now) and lastUsed.
	useMu    sync.Mutex
	users    int
	lastUsed time.Time
}

// runtimes holds the parallel steps this worker serves.
type runtimes struct {
	mu       sync.Mutex
	steps    map[string]*parallelRuntime
	starting map[string]*starting
	// monitors are the resource monitors running here, by run and step.
	monitors map[string][]*localMonitor
	stop     chan struct{}
}

// localMonitor is a resource monitor running on this worker: cancel ends
// it, done closes once it has written its last sample.
type localMonitor struct {
	cancel context.CancelFunc
	done   chan struct{}
}

func runtimeKey(ref ParallelStepRef) string {
	return ref.RunID + "\x00" + ref.StepPath + "\x00" + ref.Digest
}

// parallel returns the worker's parallel steps, starting the reaper of idle
// ones on first use.
func (a *Activities) parallel() *runtimes {
	a.parallelOnce.Do(func() {
		a.runtimes = &runtimes{steps: map[string]*parallelRuntime{}, starting: map[string]*starting{},
			monitors: map[string][]*localMonitor{}, stop: make(chan struct{})}
		go a.runtimes.reap(a.idleShutdown())
	})
	return a.runtimes
}

func (a *Activities) idleShutdown() time.Duration {
	if a.IdleShutdown > 0 {
		return a.IdleShutdown
	}
	return idleShutdown
}

// get returns the step's runtime, creating it (and its working folder) on
// first use. The caller must release it. Creating one copies the step's
// code, so it happens outside the lock: other steps' mini-batches go on.
func (r *runtimes) get(ctx context.Context, a *Activities, ref ParallelStepRef) (*parallelRuntime, error) {
	key := runtimeKey(ref)
	for {
		r.mu.Lock()
		if rt := r.steps[key]; rt != nil {
			rt.use()
			r.mu.Unlock()
			return rt, nil
		}
		s := r.starting[key]
		if s == nil {
			s = &starting{done: make(chan struct{})}
			r.starting[key] = s
			r.mu.Unlock()
			s.rt, s.err = a.newRuntime(ctx, ref)
			r.mu.Lock()
			delete(r.starting, key)
			if s.err == nil {
				r.steps[key] = s.rt
			}
			close(s.done)
			r.mu.Unlock()
		} else {
			r.mu.Unlock()
			<-s.done
		}
		if s.err != nil {
			return nil, s.err
		}
		// The runtime is in r.steps now (unless the reaper took it, which
		// the next turn sees).
	}
}

// starting is a runtime being created.
type starting struct {
	done chan struct{}
	rt   *parallelRuntime
	err  error
}

// use marks the runtime busy.
func (rt *parallelRuntime) use() {
	rt.useMu.Lock()
	rt.users++
	rt.lastUsed = time.Now()
	rt.useMu.Unlock()
}

// step returns the runtimes of a run's step (any digest) without holding them.
func (r *runtimes) step(runID, stepPath string) []*parallelRuntime {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []*parallelRuntime
	for _, rt := range r.steps {
		if rt.ref.RunID == runID && rt.ref.StepPath == stepPath {
			out = append(out, rt)
		}
	}
	return out
}

func (rt *parallelRuntime) release() {
	rt.useMu.Lock()
	rt.users--
	rt.lastUsed = time.Now()
	rt.useMu.Unlock()
}

// close stops a step's runtimes on this worker (calling shutdown() in each
// process).
func (r *runtimes) close(ctx context.Context, runID, stepPath string) {
	r.mu.Lock()
	var victims []*parallelRuntime
	for key, rt := range r.steps {
		if rt.ref.RunID == runID && rt.ref.StepPath == stepPath {
			victims = append(victims, rt)
			delete(r.steps, key)
		}
	}
	monitors := r.monitors[monitorKey(runID, stepPath)]
	delete(r.monitors, monitorKey(runID, stepPath))
	r.mu.Unlock()
	for _, rt := range victims {
		rt.shutdown(ctx)
	}
	// The step's monitors here stop now, rather than when their next
	// heartbeat hears the workflow's cancel (up to a second later, which
	// the step's end waits for).
	for _, m := range monitors {
		m.cancel()
		select {
		case <-m.done:
		case <-ctx.Done():
		}
	}
}

func monitorKey(runID, stepPath string) string { return runID + "\x00" + stepPath }

// watch registers a resource monitor of a run's step on this worker, which
// close stops; the caller calls done when the monitor has ended.
func (r *runtimes) watch(runID, stepPath string, cancel context.CancelFunc) (done func()) {
	m := &localMonitor{cancel: cancel, done: make(chan struct{})}
	key := monitorKey(runID, stepPath)
	r.mu.Lock()
	r.monitors[key] = append(r.monitors[key], m)
	r.mu.Unlock()
	return func() {
		r.mu.Lock()
		if rest := slices.DeleteFunc(r.monitors[key], func(o *localMonitor) bool { return o == m }); len(rest) > 0 {
			r.monitors[key] = rest
		} else {
			delete(r.monitors, key)
		}
		r.mu.Unlock()
		close(m.done)
	}
}

// reap stops the runtimes nobody used for idle.
func (r *runtimes) reap(idle time.Duration) {
	tick := time.NewTicker(idle / 4)
	defer tick.Stop()
	for {
		select {
		case <-r.stop:
			return
		case <-tick.C:
		}
		r.mu.Lock()
		var victims []*parallelRuntime
		for key, rt := range r.steps {
			rt.useMu.Lock()
			unused := rt.users == 0 && time.Since(rt.lastUsed) > idle
			rt.useMu.Unlock()
			if unused {
				victims = append(victims, rt)
				delete(r.steps, key)
			}
		}
		r.mu.Unlock()
		for _, rt := range victims {
			rt.shutdown(context.Background())
		}
	}
}

// Close stops every entry-script process this worker started, calling
// their shutdown(). A worker calls it when it stops.
func (a *Activities) Close(ctx context.Context) {
	if a.runtimes == nil {
		return
	}
	r := a.runtimes
	r.mu.Lock()
	select {
	case <-r.stop:
	default:
		close(r.stop)
	}
	victims := make([]*parallelRuntime, 0, len(r.steps))
	for key, rt := range r.steps {
		victims = append(victims, rt)
		delete(r.steps, key)
	}
	r.mu.Unlock()
	var wg sync.WaitGroup
	for _, rt := range victims {
		wg.Go(func() { rt.shutdown(ctx) })
	}
	wg.Wait()
}

// shutdown stops the step's processes on this node and publishes the
// node's logs, which are complete only now.
func (rt *parallelRuntime) shutdown(ctx context.Context) {
	if err := rt.pool.Close(ctx); err != nil {
		rt.log(fmt.Sprintf("porch: stopping the entry-script processes of step %q: %v", rt.ref.StepPath, err))
	}
	rt.instance.stop()
	if rt.releaseDevices != nil {
		rt.releaseDevices()
	}
	rt.manifest.Close()
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if err := rt.folders.share.publishLogs(ctx, rt.node); err != nil {
		rt.log(fmt.Sprintf("porch: publishing the logs of node %s: %v", rt.node, err))
	}
}

// request turns a mini-batch into the pool's request.
func (rt *parallelRuntime) request(b minibatch.Batch, attempt int32) (entryscript.Request, error) {
	p := rt.spec.Input.Parallel
	req := entryscript.Request{
		Index: b.Index, Attempt: int(attempt), Files: b.Files,
		LoadTimeout:     time.Duration(p.TaskOverheadTimeoutSeconds) * time.Second,
		RunTimeout:      time.Duration(p.Retry.TimeoutSeconds) * time.Second,
		ProgressTimeout: time.Duration(p.ProgressUpdateTimeoutSeconds) * time.Second,
		AllowShort:      p.ErrorThreshold < 0,
	}
	if b.Table != nil {
		raw, err := json.Marshal(b.Table)
		if err != nil {
			return req, err
		}
		req.Table = raw
	}
	if rt.appendTo {
		req.ResultPath = rt.folders.result(b.Index)
		if err := os.MkdirAll(filepath.Dir(req.ResultPath), 0o755); err != nil {
			return req, fmt.Errorf("create results folder: %w", err)
		}
	}
	return req, nil
}

// entryScriptLog is the entry-script log of one of this node's processes.
func (rt *parallelRuntime) entryScriptLog(process string) string {
	if process == "" {
		return ""
	}
	return filepath.Join(rt.folders.logs, "user", "entry_script_log", rt.node, process+".log.txt")
}

// log adds a line to the step's porch log.
func (rt *parallelRuntime) log(line string) {
	_ = stepio.AppendLog(filepath.Join(rt.folders.logs, "sys", "porch.txt"), time.Now().UTC().Format(time.RFC3339)+" "+line)
}
