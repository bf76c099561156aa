// Package entryscript runs an Azure ML parallel step's entry script in
// persistent Python processes.
//
// A Pool keeps up to size processes. Each hosts the user's script through a
// Python driver shipped inside the porch binary (driver.py): init() once per
// process, then run(mini_batch) or run(mini_batch, mini_batch_context) for
// each Request, and shutdown() when the pool closes. The driver talks to Go
// over two extra pipes (fd 3 requests, fd 4 events, one JSON object a line),
// so the script's own stdout and stderr go untouched to the step's log files
// in Azure's layout:
//
//	<LogDir>/user/entry_script_log/<node>/<process>.log.txt
//	<LogDir>/user/stdout/<node>/<process>.txt
//	<LogDir>/user/stderr/<node>/<process>.txt
//
// Every process runs in its own process group and is killed as a group: on
// a timeout, a cancelled context, or when the pool closes. A killed or
// crashed process is replaced by a fresh one (init() again) the next time its
// slot is used. The package knows nothing of Temporal.
package entryscript

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Options describe the processes of one parallel step on one node.
type Options struct {
	// Python is the interpreter; "" means "python3" on PATH.
	Python string
	// Dir is the working directory of the processes (the step's copy of
	// its code folder). It is put first on sys.path.
	Dir string
	// Script is the entry script, relative to Dir or absolute.
	Script string
	// Args are the program arguments, already rendered: sys.argv[1:].
	Args []string
	// Env is the processes' whole environment (KEY=VALUE); nil means
	// os.Environ(). porch gives the step's, which withholds the worker's
	// credentials unless the step's identity is managed.
	Env []string
	// LogDir is the step's logs folder; the package writes Azure's layout
	// under it (see the package comment). "" discards the script's stdout,
	// stderr and log.
	LogDir string
	// Node names this machine in log paths, e.g. "host-1234"; "" means the
	// host name.
	Node string
	// LoggingLevel (DEBUG, INFO, WARNING, ...) is the entry-script logger's
	// level; "" means INFO.
	LoggingLevel string
	// KillGrace is how long a process has after shutdown() is requested or
	// SIGTERM is sent before its group gets SIGKILL; 0 means 5s.
	KillGrace time.Duration
	// Tabular says mini-batches are tables: the driver imports pandas at
	// start and fails init clearly when it is missing.
	Tabular bool
	// OutputDir is what EntryScript().output_dir returns to the script;
	// "" means Dir.
	OutputDir string
	// CPUs are the cores the processes run on (their instance's share of
	// the host); none means any.
	CPUs []int
	// SecretVars name the variables of Env whose values are secrets (the
	// worker's credentials, which a managed step sees): they are blanked
	// out of the processes' stdout, stderr and entry-script logs and of
	// the errors Run returns.
	SecretVars []string
	// CacheDir is where the driver file is written; "" means
	// os.UserCacheDir()/porch (os.TempDir()/porch when there is none).
	CacheDir string
	// Container runs the processes in a running container instead of on
	// the host; Python is then the image's interpreter ("python3").
	Container *Container
}

// Request is one mini-batch for Pool.Run. Exactly one of Files and Table is
// used: Table when it is set.
type Request struct {
	// Index is the mini-batch id (minibatch_index in the context).
	Index int
	// Attempt is the attempt number, for the caller's records.
	Attempt int
	// Files is a file-list mini-batch: run() gets this list of paths.
	Files []string
	// Table is a tabular mini-batch, the JSON of a minibatch.Table: run()
	// gets a pandas DataFrame.
	Table json.RawMessage
	// ResultPath, when set, receives run()'s result after a successful
	// run(): a DataFrame as CSV with a header and no index, a list as one
	// line per item. The driver writes ResultPath+".tmp" and renames it, so
	// ResultPath is whole or absent. After a failed mini-batch it is absent.
	ResultPath string
	// LoadTimeout bounds loading the mini-batch (task_overhead_timeout);
	// 0 means none.
	LoadTimeout time.Duration
	// RunTimeout bounds run() (retry_settings.timeout); 0 means none.
	RunTimeout time.Duration
	// AllowShort makes a run() that returns fewer results than items a
	// success (error_threshold: -1, which Azure ML documents as not
	// checking failed items): the result holds what it returned.
	AllowShort bool
	// ProgressTimeout is the longest time without a progress event from
	// the driver (progress_update_timeout); 0 means none.
	ProgressTimeout time.Duration
	// Progress, when set, is called from Run's goroutine with "ready" (a
	// new process finished init()), "loaded" and "done"; the caller
	// heartbeats.
	Progress func(phase string)
}

// Result is a mini-batch that run() processed.
type Result struct {
	// Items is the number of items given: len(Files) or rows loaded.
	Items int
	// Returned is len() of what run() returned (None counts as 0).
	Returned int
	// Process is the slot's name, "process000", "process001", ...; a
	// restarted process keeps its slot's name.
	Process string
	// PID is the process that ran the mini-batch.
	PID int
	// Format is how the result was written to Request.ResultPath: "csv"
	// (a DataFrame, with a header line), "lines" (one item a line), or ""
	// when there was no ResultPath.
	Format string
	// Elapsed is the time run() took.
	Elapsed time.Duration
	// LoadElapsed is the time loading the mini-batch took.
	LoadElapsed time.Duration
}

// Kinds of BatchError.
const (
	// KindRaised is run() raising an exception (or returning something
	// that is not a list or a DataFrame).
	KindRaised = "raised"
	// KindShort is run() returning fewer results than it was given items.
	KindShort = "short"
	// KindRunTimeout is run() exceeding Request.RunTimeout.
	KindRunTimeout = "run_timeout"
	// KindLoadTimeout is loading exceeding Request.LoadTimeout.
	KindLoadTimeout = "load_timeout"
	// KindNoProgress is the driver silent for Request.ProgressTimeout.
	KindNoProgress = "no_progress"
	// KindCrashed is the process dying during the mini-batch.
	KindCrashed = "crashed"
	// KindInitFailed is a process that could not start: the interpreter,
	// the script's import, init(), or pandas for a tabular step.
	KindInitFailed = "init_failed"
	// KindLoadFailed is a mini-batch whose data could not be read.
	KindLoadFailed = "load_failed"
)

// BatchError is a failed mini-batch. Retrying may help for every Kind but
// KindInitFailed.
type BatchError struct {
	// Kind is one of the Kind constants.
	Kind string
	// Message is one line a user can act on, e.g. `run() raised
	// ValueError: bad row` or `run() returned 7 results for 10 items`.
	Message string
	// Traceback is the Python traceback when there is one; for
	// KindCrashed, the last lines of the process's stderr.
	Traceback string
	// Items is the number of items given (0 when loading did not finish).
	Items int
	// Returned is the number of results run() returned.
	Returned int
	// Process is the slot's name.
	Process string
}

// Error returns the message with the process it happened in.
func (e *BatchError) Error() string {
	if e.Process == "" {
		return e.Message
	}
	return fmt.Sprintf("%s: %s", e.Process, e.Message)
}

// Retryable reports whether running the mini-batch again may succeed.
func (e *BatchError) Retryable() bool { return e.Kind != KindInitFailed }

// ErrClosed is returned by Run on a closed Pool.
var ErrClosed = errors.New("entry script pool is closed")

func secs(d time.Duration) string {
	return fmt.Sprintf("%gs", d.Round(time.Millisecond).Seconds())
}
