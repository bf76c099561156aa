package entryscript

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"time"
)

// awaitReady waits for init() in a new process. On failure the process is
// killed and the error is a KindInitFailed BatchError or ctx's error.
func (pr *process) awaitReady(ctx context.Context) error {
	stop := context.AfterFunc(ctx, pr.wake)
	defer stop()
	ev, _, err := pr.next(ctx)
	if err == nil && ev.Ev == "ready" {
		return nil
	}
	pr.kill(pr.grace)
	if ctx.Err() != nil {
		return fmt.Errorf("%s: start of the entry script stopped: %w", pr.slot, context.Cause(ctx))
	}
	be := &BatchError{Kind: KindInitFailed, Process: pr.slot}
	switch {
	case err == nil && ev.Ev == "init_failed":
		be.Message, be.Traceback = clip(ev.Error, maxMessage), clipFront(ev.Traceback, maxTraceback)
	case err == nil:
		be.Message = fmt.Sprintf("the entry-script driver sent %q before init() finished", ev.Ev)
	default:
		be.Message = fmt.Sprintf("the entry script's process (pid %d) died before init() finished: %s; see its stderr log",
			pr.pid, pr.exitText())
		be.Traceback = pr.stderrTail()
	}
	return be
}

// runBatch runs one mini-batch in a ready process. A BatchError of kind
// raised, short or load_failed leaves the process ready for the next; any
// other failure kills it.
func (pr *process) runBatch(ctx context.Context, r Request) (Result, error) {
	res := Result{Process: pr.slot, PID: pr.pid}
	line, err := json.Marshal(request{
		Op: "run", ID: r.Index, Attempt: r.Attempt, Files: r.Files, Table: r.Table, ResultPath: r.ResultPath,
	})
	if err != nil {
		return res, fmt.Errorf("encode mini-batch %d: %w", r.Index, err)
	}
	stop := context.AfterFunc(ctx, pr.wake)
	defer stop()
	load := newLimit(r.LoadTimeout, KindLoadTimeout, fmt.Sprintf(
		"loading the mini-batch did not finish within task_overhead_timeout (%s)", secs(r.LoadTimeout)))
	if lim, err := pr.send(ctx, append(line, '\n'), load); err != nil {
		return res, pr.fail(ctx, r, lim, "loading the mini-batch", 0)
	}
	ev, lim, err := pr.next(ctx, load, pr.progressLimit(r))
	if err != nil {
		return res, pr.fail(ctx, r, lim, "loading the mini-batch", 0)
	}
	if ev.Ev == "loaded" && ev.ID == r.Index {
		res.Items = ev.Items
		progress(r, "loaded")
		runLim := newLimit(r.RunTimeout, KindRunTimeout, fmt.Sprintf(
			"run() did not return within retry_settings.timeout (%s)", secs(r.RunTimeout)))
		ev, lim, err = pr.next(ctx, runLim, pr.progressLimit(r))
		if err != nil {
			return res, pr.fail(ctx, r, lim, "run()", res.Items)
		}
	}
	return pr.finish(ctx, r, res, ev)
}

// finish turns the batch's last event into its result.
func (pr *process) finish(ctx context.Context, r Request, res Result, ev event) (Result, error) {
	if ev.ID != r.Index || (ev.Ev != "done" && ev.Ev != "failed") {
		pr.kill(pr.grace)
		removeResult(r.ResultPath)
		return res, &BatchError{Kind: KindCrashed, Process: pr.slot, Items: res.Items, Message: fmt.Sprintf(
			"the entry-script driver sent %q for mini-batch %d while running mini-batch %d; does the script write to file descriptor 4?",
			ev.Ev, ev.ID, r.Index)}
	}
	if ev.Ev == "failed" {
		removeResult(r.ResultPath)
		return res, &BatchError{Kind: ev.Kind, Message: clip(ev.Error, maxMessage),
			Traceback: clipFront(ev.Traceback, maxTraceback), Items: ev.Items, Process: pr.slot}
	}
	res.Items, res.Returned, res.Format = ev.Items, ev.Returned, ev.Format
	res.LoadElapsed = time.Duration(ev.Load * float64(time.Second))
	res.Elapsed = time.Duration(ev.Run * float64(time.Second))
	progress(r, "done")
	if res.Returned < res.Items && !r.AllowShort {
		removeResult(r.ResultPath)
		return res, &BatchError{Kind: KindShort, Items: res.Items, Returned: res.Returned, Process: pr.slot,
			Message: fmt.Sprintf("run() returned %d results for %d items", res.Returned, res.Items)}
	}
	return res, nil
}

func (pr *process) progressLimit(r Request) limit {
	return newLimit(r.ProgressTimeout, KindNoProgress, fmt.Sprintf(
		"no progress from the entry script within progress_update_timeout (%s)", secs(r.ProgressTimeout)))
}

func progress(r Request, phase string) {
	if r.Progress != nil {
		r.Progress(phase)
	}
}

// fail kills the process after a mini-batch could not finish and says why:
// ctx's error, the expired limit, or a crash during phase.
func (pr *process) fail(ctx context.Context, r Request, lim *limit, phase string, items int) error {
	pr.kill(pr.grace)
	removeResult(r.ResultPath)
	if ctx.Err() != nil {
		return fmt.Errorf("%s: mini-batch %d stopped: %w", pr.slot, r.Index, context.Cause(ctx))
	}
	if lim != nil {
		return &BatchError{Kind: lim.kind, Message: lim.message, Items: items, Process: pr.slot}
	}
	return &BatchError{Kind: KindCrashed, Items: items, Process: pr.slot, Message: fmt.Sprintf(
		"the entry script's process (pid %d) died during %s: %s; see its stderr log", pr.pid, phase, pr.exitText()),
		Traceback: pr.stderrTail()}
}

// shutdown asks the driver to call shutdown() and exit, waits up to grace
// (or ctx), then kills what is left.
func (pr *process) shutdown(ctx context.Context) error {
	if _, err := pr.send(ctx, []byte(`{"op":"shutdown"}`+"\n"), newLimit(pr.grace, "", "")); err != nil {
		pr.kill(0)
		return nil // it had died already, or ctx ended: nothing to shut down
	}
	t := time.NewTimer(pr.grace)
	defer t.Stop()
	select {
	case <-pr.exited:
	case <-t.C:
		pr.kill(0)
		return fmt.Errorf("%s: the entry script did not exit within %s of shutdown(); porch killed it", pr.slot, secs(pr.grace))
	case <-ctx.Done():
		pr.kill(0)
		return fmt.Errorf("%s: shutdown() stopped: %w", pr.slot, context.Cause(ctx))
	}
	if pr.state != nil && !pr.state.Success() {
		msg := fmt.Sprintf("%s: shutdown() failed (%s)", pr.slot, pr.exitText())
		if tail := pr.stderrTail(); tail != "" {
			msg += ": " + lastLine(tail)
		}
		return fmt.Errorf("%s; see its stderr log", msg)
	}
	return nil
}

func removeResult(path string) {
	if path != "" {
		os.Remove(path + ".tmp")
		os.Remove(path)
	}
}

func lastLine(s string) string {
	s = strings.TrimRight(s, "\n")
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}

// Caps on what a BatchError carries from Python, so a huge exception text
// cannot swell the caller's payloads.
const (
	maxMessage   = 2000
	maxTraceback = 32 << 10
)

// clip keeps the start of s.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "") + " [cut]"
}

// clipFront keeps the end of s, where a traceback names the failing line.
func clipFront(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "[cut] " + strings.ToValidUTF8(s[len(s)-n:], "")
}
