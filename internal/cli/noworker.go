package cli

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/porch-pipelines/porch/compiler/plan"
	"github.com/porch-pipelines/porch/workflows"
	enums "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
)

// noWorkerEvery is how often a watched run's running steps are checked for
// work waiting on a task queue no worker polls.
const noWorkerEvery = time.Minute

// envNoWorkerCheck overrides noWorkerEvery (a Go duration). It is internal:
// tests set it so as not to wait a minute.
const envNoWorkerCheck = "PORCH_NO_WORKER_CHECK"

// noWorkerInterval is noWorkerEvery, or what envNoWorkerCheck says.
func (a *app) noWorkerInterval() time.Duration {
	if d, err := time.ParseDuration(a.getenv(envNoWorkerCheck)); err == nil && d > 0 {
		return d
	}
	return noWorkerEvery
}

// workerCheck finds steps whose work waits on a task queue no worker polls.
type workerCheck struct {
	c client.Client
	// connect are the flags that reach the server, for the command that
	// starts a worker.
	connect string
	// every is how often a step is checked; 0 checks at once, every time
	// (porch job show).
	every time.Duration
	// checked is when each step workflow was last checked (first seen,
	// when every > 0), and found what it found then.
	checked map[string]time.Time
	found   map[string]string
}

func newWorkerCheck(c client.Client, connect string, every time.Duration) *workerCheck {
	return &workerCheck{c: c, connect: connect, every: every, checked: map[string]time.Time{}, found: map[string]string{}}
}

// detail says how long a running command or parallel step has waited for a
// worker and how to start one, "" when it waits for none. A watched step
// is first checked one interval after it was first seen, so a worker that
// a fleet is starting has time to poll.
func (w *workerCheck) detail(ctx context.Context, s workflows.StepState, now time.Time) string {
	if w == nil || s.Status != workflows.StatusRunning || s.WorkflowID == "" ||
		(s.Type != plan.StepCommand && s.Type != plan.StepParallel) {
		return ""
	}
	last, seen := w.checked[s.WorkflowID]
	if w.every > 0 && (!seen || now.Sub(last) < w.every) {
		if !seen {
			w.checked[s.WorkflowID] = now
		}
		return w.found[s.WorkflowID]
	}
	w.checked[s.WorkflowID] = now
	w.found[s.WorkflowID] = waitingForWorker(ctx, w.c, s.WorkflowID, w.connect, now)
	return w.found[s.WorkflowID]
}

// waitingForWorker looks at a step workflow's activities scheduled but not
// started, and says so for the first whose task queue has no poller.
func waitingForWorker(ctx context.Context, c client.Client, workflowID, connect string, now time.Time) string {
	ctx, cancel := context.WithTimeout(ctx, queryTimeout)
	defer cancel()
	desc, err := c.DescribeWorkflowExecution(ctx, workflowID, "")
	if err != nil {
		return ""
	}
	compute := keyword(desc.GetWorkflowExecutionInfo().GetSearchAttributes(), workflows.AttrCompute)
	for _, pa := range desc.GetPendingActivities() {
		q := pa.GetActivityOptions().GetTaskQueue().GetName()
		// A parallel step's node queue is a held worker's own: when it is
		// gone, the step holds another itself.
		if pa.GetState() != enums.PENDING_ACTIVITY_STATE_SCHEDULED || q == "" ||
			strings.HasPrefix(q, plan.NodeTaskQueue("")) {
			continue
		}
		if hasPollers(ctx, c, q, enums.TASK_QUEUE_TYPE_ACTIVITY) {
			continue
		}
		waited := ""
		if at := pa.GetScheduledTime(); at != nil {
			waited = " " + formatDuration(now.Sub(at.AsTime()).Truncate(time.Second))
		}
		return fmt.Sprintf("waiting%s: %s", waited, plan.NoWorker(compute, q, connect))
	}
	return ""
}
