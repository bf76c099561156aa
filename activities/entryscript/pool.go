package entryscript

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/porch-pipelines/porch/activities/redact"
)

// defaultKillGrace is Options.KillGrace when it is 0.
const defaultKillGrace = 5 * time.Second

// Pool keeps up to size entry-script processes of one step and runs
// mini-batches in them. Processes start lazily, on the first Run that finds
// no idle live process. All methods are safe for concurrent use.
type Pool struct {
	opts Options
	// tokens holds one token per idle slot: taking one guarantees a slot.
	tokens   chan struct{}
	closing  chan struct{}
	closed   atomic.Bool
	lastUsed atomic.Int64

	mu    sync.Mutex
	slots []*slot

	setup    sync.Once
	res      *resolved
	setupErr error
	// secrets are the values of opts.SecretVars.
	secrets []string
}

type slot struct {
	name string
	proc *process // nil until first used; dead after a crash or kill
	busy bool
}

// NewPool returns a pool of at most size processes (at least 1) for opts.
// It starts nothing: the first Run starts the first process.
func NewPool(opts Options, size int) *Pool {
	if size < 1 {
		size = 1
	}
	p := &Pool{opts: opts, tokens: make(chan struct{}, size), closing: make(chan struct{})}
	for i := range size {
		p.slots = append(p.slots, &slot{name: fmt.Sprintf("process%03d", i)})
		p.tokens <- struct{}{}
	}
	p.lastUsed.Store(time.Now().UnixNano())
	env := opts.Env
	if env == nil {
		env = os.Environ()
	}
	p.secrets = redact.Values(env, opts.SecretVars)
	return p
}

// Run runs one mini-batch. It takes an idle process, or starts one (running
// init()) when fewer than size are alive, or waits for one while ctx allows.
// A failed mini-batch is a *BatchError. When ctx ends or a timeout expires
// the process's group is killed, and its slot starts a fresh process on its
// next use; so does a process that crashed. After Close, Run returns
// ErrClosed.
func (p *Pool) Run(ctx context.Context, r Request) (Result, error) {
	s, err := p.acquire(ctx)
	if err != nil {
		return Result{}, err
	}
	defer p.release(s)
	if err := ctx.Err(); err != nil {
		// Cancelled while waiting: the idle process stays as it is.
		return Result{}, fmt.Errorf("mini-batch %d: %w", r.Index, context.Cause(ctx))
	}
	p.touch()
	defer p.touch()
	if s.proc == nil || s.proc.dead.Load() {
		if err := p.start(ctx, s); err != nil {
			return Result{}, p.closedOr(err)
		}
		progress(r, "ready")
	}
	res, err := s.proc.runBatch(ctx, r)
	if err != nil {
		err = p.closedOr(err)
	}
	return res, p.redacted(err)
}

// redacted blanks the step's secrets out of a failed mini-batch's message
// and traceback, which go to the step's logs and Temporal's history.
func (p *Pool) redacted(err error) error {
	var be *BatchError
	if len(p.secrets) == 0 || !errors.As(err, &be) {
		return err
	}
	be.Message = redact.String(be.Message, p.secrets)
	be.Traceback = redact.String(be.Traceback, p.secrets)
	return err
}

// closedOr returns ErrClosed for a failure caused by Close killing the
// process, else err.
func (p *Pool) closedOr(err error) error {
	var be *BatchError
	if p.closed.Load() && errors.As(err, &be) && (be.Kind == KindCrashed || be.Kind == KindInitFailed) {
		return fmt.Errorf("%w: %s was stopped", ErrClosed, be.Process)
	}
	return err
}

func (p *Pool) start(ctx context.Context, s *slot) error {
	p.setup.Do(func() { p.res, p.setupErr = resolve(p.opts) })
	if p.setupErr != nil {
		return &BatchError{Kind: KindInitFailed, Process: s.name, Message: p.setupErr.Error()}
	}
	if s.proc != nil {
		s.proc.release()
	}
	pr, err := spawn(p.res, s.name, p.secrets)
	if err != nil {
		return err
	}
	// Published before init() ends, so Close can kill a slow init().
	p.mu.Lock()
	s.proc = pr
	p.mu.Unlock()
	return pr.awaitReady(ctx)
}

func (p *Pool) acquire(ctx context.Context) (*slot, error) {
	select {
	case <-p.tokens:
	case <-ctx.Done():
		return nil, fmt.Errorf("wait for an entry-script process: %w", context.Cause(ctx))
	case <-p.closing:
		return nil, ErrClosed
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed.Load() {
		p.tokens <- struct{}{}
		return nil, ErrClosed
	}
	// Prefer a live process, so sequential use does not start size of them.
	var pick *slot
	for _, s := range p.slots {
		if s.busy {
			continue
		}
		if s.proc != nil && !s.proc.dead.Load() {
			pick = s
			break
		}
		if pick == nil {
			pick = s
		}
	}
	pick.busy = true
	return pick, nil
}

func (p *Pool) release(s *slot) {
	p.mu.Lock()
	s.busy = false
	p.mu.Unlock()
	p.tokens <- struct{}{}
}

func (p *Pool) touch() { p.lastUsed.Store(time.Now().UnixNano()) }

// LastUsed returns when a Run last started or ended (NewPool's time before
// any), for the caller's idle reaping.
func (p *Pool) LastUsed() time.Time { return time.Unix(0, p.lastUsed.Load()) }

// PIDs returns the process ids of the live processes, for the resource
// monitor, each in a process group of its own.
func (p *Pool) PIDs() []int {
	p.mu.Lock()
	defer p.mu.Unlock()
	var pids []int
	for _, s := range p.slots {
		if s.proc != nil && !s.proc.dead.Load() {
			pids = append(pids, s.proc.pid)
		}
	}
	return pids
}

// Close stops the pool: new Runs fail with ErrClosed, running ones may
// finish while ctx allows (then their processes are killed), and every live
// process is asked to call shutdown() and exit, and killed with its group
// when it has not after KillGrace. It returns the processes' shutdown
// failures. Closing a closed pool does nothing.
func (p *Pool) Close(ctx context.Context) error {
	p.mu.Lock()
	if p.closed.Load() {
		p.mu.Unlock()
		return nil
	}
	p.closed.Store(true)
	close(p.closing)
	p.mu.Unlock()
	for n, killed := 0, false; n < len(p.slots); {
		select {
		case <-p.tokens:
			n++
		case <-ctx.Done():
			if !killed {
				killed = true
				p.killBusy()
			}
			<-p.tokens
			n++
		}
	}
	var wg sync.WaitGroup
	errs := make([]error, len(p.slots))
	for i, s := range p.slots {
		if s.proc == nil || s.proc.dead.Load() {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = s.proc.shutdown(ctx)
		}()
	}
	wg.Wait()
	for _, s := range p.slots {
		if s.proc != nil {
			s.proc.release()
		}
	}
	return errors.Join(errs...)
}

// killBusy kills the processes of the slots in use; their Runs then return.
func (p *Pool) killBusy() {
	p.mu.Lock()
	var procs []*process
	for _, s := range p.slots {
		if s.busy && s.proc != nil {
			procs = append(procs, s.proc)
		}
	}
	p.mu.Unlock()
	for _, pr := range procs {
		go pr.kill(0)
	}
}

// resolved is Options with defaults applied and paths made absolute.
type resolved struct {
	Options
	python, driver, dir, script, logDir, node string
	env                                       []string
	grace                                     time.Duration
}

// Interpreter is the Python that Options.Python names: python3 on PATH
// when it names none.
func Interpreter(python string) string {
	if python == "" {
		return "python3"
	}
	return python
}

func resolve(o Options) (*resolved, error) {
	r := &resolved{Options: o, python: Interpreter(o.Python), node: o.Node, grace: o.KillGrace, logDir: o.LogDir}
	if r.grace <= 0 {
		r.grace = defaultKillGrace
	}
	if r.node == "" {
		r.node, _ = os.Hostname()
		if r.node == "" {
			r.node = "localhost"
		}
	}
	var err error
	if r.dir, err = filepath.Abs(o.Dir); err != nil {
		return nil, fmt.Errorf("code folder %q: %v", o.Dir, err)
	}
	if r.logDir != "" {
		if r.logDir, err = filepath.Abs(r.logDir); err != nil {
			return nil, fmt.Errorf("log folder %q: %v", o.LogDir, err)
		}
	}
	r.script = o.Script
	if !filepath.IsAbs(r.script) {
		r.script = filepath.Join(r.dir, r.script)
	}
	if fi, err := os.Stat(r.script); err != nil || fi.IsDir() {
		return nil, fmt.Errorf("entry script %q not found in code folder %q: check task.entry_script and task.code",
			o.Script, r.dir)
	}
	if r.driver, err = DriverPath(o.CacheDir); err != nil {
		return nil, err
	}
	r.env = o.Env
	if r.env == nil {
		r.env = os.Environ()
	}
	return r, nil
}
