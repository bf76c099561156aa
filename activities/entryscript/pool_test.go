package entryscript

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A script that records init() and shutdown() calls and returns its
// mini-batch, or fails in the way its first path asks for.
const behaviourScript = `
import os, subprocess, sys, time
OUT = os.environ["OUT"]

def note(name, text):
    with open(os.path.join(OUT, name), "a") as f:
        f.write(text + "\n")

def init():
    note("init", str(os.getpid()))

def run(mini_batch):
    first = mini_batch[0] if mini_batch else ""
    if first == "raise":
        raise ValueError("bad row")
    if first == "short":
        return mini_batch[:-1]
    if first == "crash":
        print("dying now", file=sys.stderr, flush=True)
        os._exit(3)
    if first == "slow":
        child = subprocess.Popen(["sleep", "600"])
        note("child", str(child.pid))
        time.sleep(600)
    if first == "hang":
        while True:
            time.sleep(1)
    return [p.upper() for p in mini_batch]

def shutdown():
    note("shutdown", str(os.getpid()))
`

func TestInitOncePerProcess(t *testing.T) {
	f := newFixture(t, behaviourScript)
	p := f.pool(t, 1)
	created := p.LastUsed()
	var pids []int
	for i := range 20 {
		res, err := p.Run(context.Background(), Request{Index: i, Files: paths(10)})
		require.NoError(t, err)
		assert.Equal(t, 10, res.Items)
		assert.Equal(t, 10, res.Returned)
		assert.Equal(t, "process000", res.Process)
		pids = append(pids, res.PID)
	}
	assert.Equal(t, []string{strconv.Itoa(pids[0])}, lines(f.read(t, "init")), "init() once, in the process that ran every batch")
	for _, pid := range pids {
		assert.Equal(t, pids[0], pid)
	}
	assert.Equal(t, []int{pids[0]}, p.PIDs())
	assert.True(t, p.LastUsed().After(created), "LastUsed moves with each Run")
}

func TestResultPathHoldsOneLinePerItem(t *testing.T) {
	f := newFixture(t, behaviourScript)
	p := f.pool(t, 1)
	out := filepath.Join(f.out, "result.txt")
	_, err := p.Run(context.Background(), Request{Index: 3, Files: []string{"a", "b"}, ResultPath: out})
	require.NoError(t, err)
	b, err := os.ReadFile(out)
	require.NoError(t, err)
	assert.Equal(t, "A\nB\n", string(b))
	assert.NoFileExists(t, out+".tmp")
}

func TestRaisedKeepsTheProcess(t *testing.T) {
	f := newFixture(t, behaviourScript)
	p := f.pool(t, 1)
	out := filepath.Join(f.out, "result.txt")
	_, err := p.Run(context.Background(), Request{Index: 1, Files: []string{"raise", "x"}, ResultPath: out})
	be := batchError(t, err, KindRaised)
	assert.Equal(t, "run() raised ValueError: bad row", be.Message)
	assert.Contains(t, be.Traceback, "score.py")
	assert.Contains(t, be.Traceback, `raise ValueError("bad row")`)
	assert.Equal(t, 2, be.Items)
	assert.True(t, be.Retryable())
	assert.NoFileExists(t, out)

	res, err := p.Run(context.Background(), Request{Index: 2, Files: []string{"ok"}})
	require.NoError(t, err)
	assert.Len(t, lines(f.read(t, "init")), 1, "the process that raised runs the next batch")
	assert.Equal(t, strconv.Itoa(res.PID), lines(f.read(t, "init"))[0])
}

func TestShortReturn(t *testing.T) {
	f := newFixture(t, behaviourScript)
	p := f.pool(t, 1)
	out := filepath.Join(f.out, "result.txt")
	_, err := p.Run(context.Background(), Request{Index: 1, Files: []string{"short", "b", "c"}, ResultPath: out})
	be := batchError(t, err, KindShort)
	assert.Equal(t, "run() returned 2 results for 3 items", be.Message)
	assert.Equal(t, 3, be.Items)
	assert.Equal(t, 2, be.Returned)
	assert.NoFileExists(t, out, "a short batch leaves no result")
}

func TestRunTimeoutKillsTheGroupAndRestarts(t *testing.T) {
	f := newFixture(t, behaviourScript)
	p := f.pool(t, 1)
	first, err := p.Run(context.Background(), Request{Index: 0, Files: []string{"a"}})
	require.NoError(t, err)

	_, err = p.Run(context.Background(), Request{Index: 1, Files: []string{"slow"}, RunTimeout: 500 * time.Millisecond})
	be := batchError(t, err, KindRunTimeout)
	assert.Equal(t, "run() did not return within retry_settings.timeout (0.5s)", be.Message)
	assert.Equal(t, 1, be.Items)
	assert.True(t, gone(first.PID), "the timed-out process is dead")
	child, err := strconv.Atoi(strings.TrimSpace(f.read(t, "child")))
	require.NoError(t, err)
	// The child is killed with the group; it may linger as a zombie until
	// its new parent reaps it, which gone accepts.
	require.Eventually(t, func() bool { return gone(child) }, 5*time.Second, 10*time.Millisecond,
		"waiting for run()'s child process to die with its group")
	assert.Empty(t, p.PIDs())

	res, err := p.Run(context.Background(), Request{Index: 2, Files: []string{"b"}})
	require.NoError(t, err)
	assert.NotEqual(t, first.PID, res.PID)
	assert.Equal(t, "process000", res.Process, "a restarted process keeps its slot's name")
	assert.Equal(t, []string{strconv.Itoa(first.PID), strconv.Itoa(res.PID)}, lines(f.read(t, "init")))
}

func TestHungScriptIsNoProgress(t *testing.T) {
	f := newFixture(t, behaviourScript)
	p := f.pool(t, 1)
	var phases []string
	_, err := p.Run(context.Background(), Request{
		Index: 4, Files: []string{"hang"}, ProgressTimeout: 300 * time.Millisecond, RunTimeout: time.Hour,
		Progress: func(phase string) { phases = append(phases, phase) },
	})
	be := batchError(t, err, KindNoProgress)
	assert.Equal(t, "no progress from the entry script within progress_update_timeout (0.3s)", be.Message)
	assert.Equal(t, []string{"ready", "loaded"}, phases)
}

func TestCrashThenRestart(t *testing.T) {
	f := newFixture(t, behaviourScript)
	p := f.pool(t, 1)
	_, err := p.Run(context.Background(), Request{Index: 1, Files: []string{"crash"}})
	be := batchError(t, err, KindCrashed)
	assert.Contains(t, be.Message, "died during run(): exit status 3")
	assert.Contains(t, be.Traceback, "dying now")
	assert.True(t, be.Retryable())

	res, err := p.Run(context.Background(), Request{Index: 2, Files: []string{"a"}})
	require.NoError(t, err)
	assert.Len(t, lines(f.read(t, "init")), 2, "the slot started a fresh process")
	assert.Equal(t, strconv.Itoa(res.PID), lines(f.read(t, "init"))[1])
}

func TestCancelKillsTheProcess(t *testing.T) {
	f := newFixture(t, behaviourScript)
	p := f.pool(t, 1)
	ctx, cancel := context.WithCancel(context.Background())
	loaded := make(chan struct{})
	go func() {
		<-loaded // run() has its mini-batch: cancel it mid-run
		cancel()
	}()
	res, err := p.Run(ctx, Request{Index: 1, Files: []string{"hang"}, Progress: func(phase string) {
		if phase == "loaded" {
			close(loaded)
		}
	}})
	require.ErrorIs(t, err, context.Canceled)
	assert.True(t, gone(res.PID))
	_, err = p.Run(context.Background(), Request{Index: 2, Files: []string{"a"}})
	require.NoError(t, err)
	assert.Len(t, lines(f.read(t, "init")), 2)
}

func TestConcurrentRunsUseTwoProcesses(t *testing.T) {
	// Each run() waits until both have arrived, so the test passes only
	// when the two mini-batches run at the same time.
	f := newFixture(t, `
import os, time
OUT = os.environ["OUT"]
def run(mini_batch):
    open(os.path.join(OUT, "arrived-%d" % os.getpid()), "w").close()
    deadline = time.time() + 20
    while len([n for n in os.listdir(OUT) if n.startswith("arrived-")]) < 2:
        if time.time() > deadline:
            raise TimeoutError("the other mini-batch never started")
        time.sleep(0.01)
    return mini_batch
`)
	p := f.pool(t, 2)
	var wg sync.WaitGroup
	results := make([]Result, 2)
	errs := make([]error, 2)
	for i := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i], errs[i] = p.Run(context.Background(), Request{Index: i, Files: []string{"x"}})
		}()
	}
	wg.Wait()
	require.NoError(t, errs[0])
	require.NoError(t, errs[1])
	assert.NotEqual(t, results[0].PID, results[1].PID)
	assert.ElementsMatch(t, []string{"process000", "process001"}, []string{results[0].Process, results[1].Process})
	assert.ElementsMatch(t, []int{results[0].PID, results[1].PID}, p.PIDs())
}

func TestCloseCallsShutdown(t *testing.T) {
	f := newFixture(t, behaviourScript)
	p := f.pool(t, 2)
	res, err := p.Run(context.Background(), Request{Index: 0, Files: []string{"a"}})
	require.NoError(t, err)
	require.NoError(t, p.Close(context.Background()))
	assert.Equal(t, []string{strconv.Itoa(res.PID)}, lines(f.read(t, "shutdown")))
	assert.True(t, gone(res.PID))
	assert.Empty(t, p.PIDs())
	_, err = p.Run(context.Background(), Request{Index: 1, Files: []string{"a"}})
	assert.ErrorIs(t, err, ErrClosed)
	assert.NoError(t, p.Close(context.Background()), "closing twice does nothing")
}

func TestCloseReportsAFailedShutdown(t *testing.T) {
	f := newFixture(t, "def run(b):\n    return b\ndef shutdown():\n    raise OSError('disk gone')\n")
	p := f.pool(t, 1)
	_, err := p.Run(context.Background(), Request{Files: []string{"a"}})
	require.NoError(t, err)
	err = p.Close(context.Background())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "process000: shutdown() failed (exit status 1): OSError: disk gone")
}

func TestArgvReachesTheScript(t *testing.T) {
	f := newFixture(t, `
import argparse, sys
def init():
    global args, argv0
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", required=True)
    args, _ = parser.parse_known_args()
    argv0 = sys.argv[0]
def run(mini_batch):
    return ["%s %s %s" % (argv0.endswith("score.py"), args.model, p) for p in mini_batch]
`)
	f.opts.Args = []string{"--model", "/models/m 1", "--unknown", "x"}
	p := f.pool(t, 1)
	out := filepath.Join(f.out, "result.txt")
	_, err := p.Run(context.Background(), Request{Files: []string{"f1"}, ResultPath: out})
	require.NoError(t, err)
	b, err := os.ReadFile(out)
	require.NoError(t, err)
	assert.Equal(t, "True /models/m 1 f1\n", string(b))
}

func TestTwoArgRunGetsContext(t *testing.T) {
	f := newFixture(t, `
def run(mini_batch, mini_batch_context):
    c = mini_batch_context
    return ["%s %r %r" % (p, c.minibatch_index, c.partition_key_value) + " %r" % (c.dataset,) for p in mini_batch]
`)
	p := f.pool(t, 1)
	out := filepath.Join(f.out, "result.txt")
	_, err := p.Run(context.Background(), Request{Index: 7, Files: []string{"f1", "f2"}, ResultPath: out})
	require.NoError(t, err)
	b, err := os.ReadFile(out)
	require.NoError(t, err)
	assert.Equal(t, "f1 7 {} None\nf2 7 {} None\n", string(b))
}

func TestInitFailed(t *testing.T) {
	f := newFixture(t, "def init():\n    raise RuntimeError('no model at /m')\ndef run(b):\n    return b\n")
	p := f.pool(t, 1)
	_, err := p.Run(context.Background(), Request{Files: []string{"a"}})
	be := batchError(t, err, KindInitFailed)
	assert.Equal(t, "init() raised RuntimeError: no model at /m", be.Message)
	assert.Contains(t, be.Traceback, "score.py")
	assert.False(t, be.Retryable())
	assert.Empty(t, p.PIDs())
}

func TestStartProblemsAreInitFailed(t *testing.T) {
	cases := map[string]struct {
		script string
		edit   func(*Options)
		want   string
	}{
		"no run":        {"x = 1\n", nil, `entry script 'score.py' defines no run(mini_batch) function: define one`},
		"syntax error":  {"def run(:\n", nil, "import entry script 'score.py' raised SyntaxError"},
		"missing":       {"", func(o *Options) { o.Script = "nope.py" }, `entry script "nope.py" not found in code folder`},
		"no python":     {"", func(o *Options) { o.Python = "/no/such/python" }, `cannot start the entry script's Python "/no/such/python"`},
		"import errors": {"import no_such_module_xyz\n", nil, "ModuleNotFoundError: No module named 'no_such_module_xyz'"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t, c.script)
			if c.edit != nil {
				c.edit(&f.opts)
			}
			_, err := f.pool(t, 1).Run(context.Background(), Request{Files: []string{"a"}})
			be := batchError(t, err, KindInitFailed)
			assert.Contains(t, be.Message, c.want)
		})
	}
}

func TestEntryScriptHelperAndLogLayout(t *testing.T) {
	f := newFixture(t, `
import sys
from azureml_user.parallel_run import EntryScript
def init():
    es = EntryScript()
    es.logger.info("hello from init")
    es.logger.debug("debug is on")
    print("to stdout", flush=True)
    print("to stderr", file=sys.stderr, flush=True)
def run(mini_batch):
    es = EntryScript()
    assert es is EntryScript(), "EntryScript is a singleton"
    return [es.working_dir, es.output_dir, es.log_dir]
`)
	f.opts.OutputDir = f.out
	f.opts.LoggingLevel = "DEBUG"
	p := f.pool(t, 1)
	out := filepath.Join(f.out, "result.txt")
	_, err := p.Run(context.Background(), Request{Files: []string{"a", "b", "c"}, ResultPath: out})
	require.NoError(t, err)
	b, err := os.ReadFile(out)
	require.NoError(t, err)
	assert.Equal(t, []string{f.opts.Dir, f.out, filepath.Join(f.opts.LogDir, "user")}, lines(string(b)))

	user := filepath.Join(f.opts.LogDir, "user")
	entryLog, err := os.ReadFile(filepath.Join(user, "entry_script_log", "node-1", "process000.log.txt"))
	require.NoError(t, err)
	assert.Contains(t, string(entryLog), "|INFO|")
	assert.Contains(t, string(entryLog), "hello from init")
	assert.Contains(t, string(entryLog), "debug is on")
	stdout, err := os.ReadFile(filepath.Join(user, "stdout", "node-1", "process000.txt"))
	require.NoError(t, err)
	assert.Equal(t, "to stdout\n", string(stdout))
	stderr, err := os.ReadFile(filepath.Join(user, "stderr", "node-1", "process000.txt"))
	require.NoError(t, err)
	assert.Equal(t, "to stderr\n", string(stderr))
}

func TestRunHonoursContextWhileWaitingForAProcess(t *testing.T) {
	f := newFixture(t, behaviourScript)
	p := f.pool(t, 1)
	busy := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		_, err := p.Run(context.Background(), Request{Files: []string{"hang"}, RunTimeout: 20 * time.Second,
			Progress: func(phase string) {
				if phase == "loaded" {
					close(busy)
				}
			}})
		done <- err
	}()
	<-busy // the only process is running a mini-batch
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := p.Run(ctx, Request{Files: []string{"a"}})
	require.ErrorIs(t, err, context.Canceled)
	closeCtx, stop := context.WithCancel(context.Background())
	stop() // Close must not wait for the hung run(): kill it
	_ = p.Close(closeCtx)
	err = <-done
	assert.True(t, errors.Is(err, ErrClosed), "got %v", err)
}

func TestDriverFileIsWrittenOnce(t *testing.T) {
	dir := t.TempDir()
	a, err := DriverPath(dir)
	require.NoError(t, err)
	b, err := DriverPath(dir)
	require.NoError(t, err)
	assert.Equal(t, a, b)
	assert.Contains(t, filepath.Base(a), "entryscript-driver-")
	got, err := os.ReadFile(a)
	require.NoError(t, err)
	assert.Equal(t, driverSource, got)
}

func TestLargeBatchesAndMessages(t *testing.T) {
	// Requests and events larger than a pipe's buffer (64 KiB).
	f := newFixture(t, "def run(mini_batch):\n    if mini_batch[0] == 'raise':\n        raise KeyError('k' * 200000)\n    return mini_batch\n")
	p := f.pool(t, 1)
	files := make([]string, 5000)
	for i := range files {
		files[i] = "/data/" + strings.Repeat("p", 100) + strconv.Itoa(i)
	}
	res, err := p.Run(context.Background(), Request{Files: files})
	require.NoError(t, err)
	assert.Equal(t, 5000, res.Returned)
	_, err = p.Run(context.Background(), Request{Files: []string{"raise"}})
	be := batchError(t, err, KindRaised)
	assert.True(t, strings.HasPrefix(be.Message, "run() raised KeyError: 'kkk"), be.Message[:40])
	assert.True(t, strings.HasSuffix(be.Message, "k [cut]"))
	assert.Less(t, len(be.Message), 2100)
	assert.True(t, strings.HasPrefix(be.Traceback, "[cut] kkk"), "the traceback keeps its end")
	assert.LessOrEqual(t, len(be.Traceback), 33<<10)
}

func TestCancelledContextLeavesTheIdleProcess(t *testing.T) {
	f := newFixture(t, behaviourScript)
	p := f.pool(t, 1)
	first, err := p.Run(context.Background(), Request{Files: []string{"a"}})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = p.Run(ctx, Request{Files: []string{"a"}})
	require.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, []int{first.PID}, p.PIDs())
}
