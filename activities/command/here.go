package command

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/porch-pipelines/porch/activities/stepio"
)

// A command step whose queue is its workflow's own starts as a local
// activity of the step's workflow, on the worker that runs the workflow's
// task. A short command then costs no activity task: no schedule, poll,
// start and completion through the server, and no second workflow task,
// which on one machine is most of what a trivial step costs over the
// bare child workflow it runs in.
//
// A local activity holds its workflow's task open, and a long one would
// fill the history with workflow tasks and show nothing in the UI, so a
// command that outlasts hereBudget moves: the local activity returns where
// it runs (RunCommandResult.Moved), and the step's workflow follows it
// with a RunCommand activity on this worker's own queue. That activity
// heartbeats with the command's details, and is cancelled, paused and
// reset as any step's; it returns the command's result. A worker that dies
// takes the command with it (its lifeline), and the step runs again.
const (
	// hereBudget is how long a command runs in its local activity before
	// it moves, well within the workflow task's timeout (10 s).
	hereBudget = 2 * time.Second
	// followWait is how long a moved command waits for the activity that
	// follows it before it is stopped: by then the step's workflow gave
	// up on it (that activity waits at most 30 s to be taken) and runs
	// the step again, or the workflow is gone (terminated or reset while
	// its command was in the local activity, which is not told).
	followWait = 40 * time.Second
	// followCheck is how often a moved command not followed yet asks
	// whether its workflow still runs.
	followCheck = time.Second
)

// errNotFollowed stops a moved command no activity came for.
var errNotFollowed = errors.New("no activity followed the command after it moved out of its local activity")

// errWorkflowClosed stops a moved command whose workflow closed before
// an activity followed it: it was cancelled, terminated or reset while
// the command ran in its local activity, which holds the workflow task
// that would have told it.
var errWorkflowClosed = errors.New("the step's workflow execution closed (cancelled, terminated or reset) while its command ran in a local activity")

// errWorkerStopped stops the moved commands of a worker that stops.
var errWorkerStopped = errors.New("the worker stopped")

// hereRun is a command run by a local activity, on its own context.
type hereRun struct {
	done  chan struct{}
	stop  context.CancelCauseFunc
	beats *stepio.Beats
	res   RunCommandResult
	err   error
}

// runHere runs the command of a local activity. The command runs on a
// context of its own, which keeps the activity's values (its info, the
// logger) but not its end: when the budget is spent the activity returns
// Moved and the command runs on, waiting for RunCommand to follow it.
// Cancelling the local activity stops the command and waits for it.
func (a *Activities) runHere(ctx context.Context, in RunCommandInput) (RunCommandResult, error) {
	beats := &stepio.Beats{}
	cmdCtx, stop := context.WithCancelCause(stepio.WithBeats(context.WithoutCancel(ctx), beats))
	h := &hereRun{done: make(chan struct{}), stop: stop, beats: beats}
	a.moved.started(h)
	go func() {
		defer close(h.done)
		defer a.moved.ended(h)
		h.res, h.err = a.run(cmdCtx, in)
		stop(nil)
	}()
	budget := time.NewTimer(hereBudget)
	defer budget.Stop()
	select {
	case <-h.done:
		return h.res, h.err
	case <-ctx.Done():
		stop(context.Cause(ctx))
		<-h.done
		return h.res, h.err
	case <-budget.C:
	}
	info := activity.GetInfo(ctx)
	key := strings.Join([]string{info.WorkflowExecution.ID, info.WorkflowExecution.RunID, info.ActivityID}, "/")
	wf := info.WorkflowExecution
	a.moved.put(key, h, followWait, func() bool {
		if a.WorkflowClosed == nil {
			return false
		}
		ctx, cancel := context.WithTimeout(context.Background(), followCheck)
		defer cancel()
		return a.WorkflowClosed(ctx, wf.ID, wf.RunID)
	})
	return RunCommandResult{Moved: &Moved{Key: key, Node: a.NodeName()}}, nil
}

// follow waits for the moved command key to end, heartbeating with its
// details, and returns its result. Cancelling the activity stops the
// command.
func (a *Activities) follow(ctx context.Context, key string) (RunCommandResult, error) {
	h := a.moved.take(key)
	if h == nil {
		return RunCommandResult{}, temporal.NewApplicationError(fmt.Sprintf(
			"porch: the command %s no longer runs on worker %s: it was stopped before this activity came, or the worker restarted",
			key, a.NodeName()), CommandLostType)
	}
	stopBeats := a.BeatWhile(ctx, func() any {
		if d := h.beats.Latest(); d != nil {
			return d
		}
		return stepio.Beat{Phase: "running"}
	})
	defer stopBeats()
	select {
	case <-h.done:
	case <-ctx.Done():
		h.stop(context.Cause(ctx))
		<-h.done
	}
	return h.res, h.err
}

// declineHere is RunCommand on a worker that runs no steps.
func declineHere(ctx context.Context, _ RunCommandInput) (RunCommandResult, error) {
	return RunCommandResult{Declined: "this worker runs workflows, not steps"}, nil
}

// movedCommands are the commands of one worker's local activities, until
// they end, and those that moved out of them and wait for the activity
// that follows them.
type movedCommands struct {
	mu      sync.Mutex
	running map[*hereRun]bool
	waiting map[string]*hereRun
}

// started and ended keep the set of running commands.
func (m *movedCommands) started(h *hereRun) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.running == nil {
		m.running = map[*hereRun]bool{}
	}
	m.running[h] = true
}

func (m *movedCommands) ended(h *hereRun) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.running, h)
}

// put keeps h under key for the one activity that follows it (take), even
// once it has ended: its result is the step's. It stops h and forgets it
// when no activity took it within wait, or as soon as closed says its
// workflow is no longer running (asked every followCheck; nil never asks).
func (m *movedCommands) put(key string, h *hereRun, wait time.Duration, closed func() bool) {
	m.mu.Lock()
	if m.waiting == nil {
		m.waiting = map[string]*hereRun{}
	}
	m.waiting[key] = h
	m.mu.Unlock()
	go func() {
		deadline := time.NewTimer(wait)
		defer deadline.Stop()
		check := time.NewTicker(followCheck)
		defer check.Stop()
		for {
			var cause error
			select {
			case <-deadline.C:
				cause = errNotFollowed
			case <-check.C:
				if !m.isWaiting(key, h) {
					return
				}
				if closed == nil || !closed() {
					continue
				}
				cause = errWorkflowClosed
			}
			if m.take(key) == h {
				h.stop(cause)
			}
			return
		}
	}()
}

// isWaiting says h still waits under key for an activity to follow it.
func (m *movedCommands) isWaiting(key string, h *hereRun) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.waiting[key] == h
}

// take hands out the command under key to the one activity that follows
// it; nil when none waits there.
func (m *movedCommands) take(key string) *hereRun {
	m.mu.Lock()
	defer m.mu.Unlock()
	h := m.waiting[key]
	delete(m.waiting, key)
	return h
}

// StopMoved stops every command a local activity started that runs on,
// moved (followed or not) or not, and waits for them to end: a worker
// that stops takes its steps' commands with it.
func (a *Activities) StopMoved() {
	a.moved.mu.Lock()
	var runs []*hereRun
	for h := range a.moved.running {
		runs = append(runs, h)
	}
	a.moved.mu.Unlock()
	for _, h := range runs {
		h.stop(errWorkerStopped)
	}
	for _, h := range runs {
		<-h.done
	}
}
