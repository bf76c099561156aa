package workflows

import (
	"errors"
	"fmt"
	"time"

	enums "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/porch-pipelines/porch/activities/reuse"
	"github.com/porch-pipelines/porch/compiler/plan"
)

// reuseChange is the GetVersion id of DAGs that decide, before a step
// runs, whether it reuses an earlier run's outputs (version 1). It is
// asked only for a step that could be reused, so the histories of runs
// made before are replayed as they ran.
const reuseChange = "porch-reuse"

// StatusReused is a step that did not run: an earlier run's outputs, from
// a step with the same reuse key, are its own.
const StatusReused StepStatus = "reused"

// Reuse is what the reuse decision said about a step.
type Reuse struct {
	Key string `json:"key"`
	// Reason says why the step ran; "" for a reused step.
	Reason string `json:"reason,omitempty"`
	// FromRun and FromStep produced a reused step's outputs.
	FromRun  string `json:"from_run,omitempty"`
	FromStep string `json:"from_step,omitempty"`
	// Parts are the key's parts; Was the parts of the step's latest
	// record, of run WasRun, that the reason compares them with.
	Parts  []reuse.Part `json:"parts,omitempty"`
	Was    []reuse.Part `json:"was,omitempty"`
	WasRun string       `json:"was_run,omitempty"`
}

// ReasonUndecided starts the reason of a step whose reuse decision
// failed: it ran without one.
const ReasonUndecided = "reuse not decided: "

// reuseTimeout bounds one attempt at deciding a step: hashing inputs that
// were never hashed reads them once. The decision heartbeats while it
// hashes, with the step's heartbeat timeout (decideHeartbeat), so a worker
// that dies mid-hash costs that timeout, and the next attempt runs on
// another worker. reuseStartTimeout is how long a decision waits for a
// worker of the default queue before the step runs undecided.
const (
	reuseTimeout      = time.Hour
	reuseStartTimeout = time.Minute
)

// decideHeartbeat is the heartbeat timeout of a step's reuse decision: the
// step's own (a parallel step's progress_update_timeout).
func decideHeartbeat(s plan.Step) time.Duration {
	if s.Parallel != nil && s.Parallel.ProgressUpdateTimeoutSeconds > 0 {
		return time.Duration(s.Parallel.ProgressUpdateTimeoutSeconds) * time.Second
	}
	return heartbeatTimeout
}

// decides says whether a step's reuse is decided before it runs: command,
// parallel and sweep steps are (a nested pipeline's steps decide their
// own), in a DAG that has the change.
func (d *dag) decides(ctx workflow.Context, n *node) bool {
	if n.step.Type == plan.StepPipeline {
		return false
	}
	return workflow.GetVersion(ctx, reuseChange, workflow.DefaultVersion, 1) == 1
}

// decideHereChange is the GetVersion id of DAGs that first decide a
// step's reuse in a local activity on the worker running the DAG (version
// 1): the decision then costs no round trip through the server. A worker
// that cannot (it runs no steps of the default queue, the decision fails,
// or it takes longer than decideHereBudget) leaves it to DecideReuse on
// the default queue, which heartbeats and retries as before. It is asked
// only for a step that is decided.
const decideHereChange = "porch-reuse-decide-here"

// decideHereBudget bounds a decision on the DAG's own worker. A local
// activity holds the DAG's workflow task open (Temporal's default task
// timeout is 10 s): deciding a step whose inputs were never hashed (a
// large dataset) is left to DecideReuse, which heartbeats.
const decideHereBudget = 3 * time.Second

// decidesHere says whether the DAG first decides a step on its own worker.
func (d *dag) decidesHere(ctx workflow.Context) bool {
	return workflow.GetVersion(ctx, decideHereChange, workflow.DefaultVersion, 1) == 1
}

// decideInput is what a decision of the step needs; it carries the
// records of the steps that succeeded since the last decision.
func (d *dag) decideInput(n *node) reuse.DecideInput {
	in := reuse.DecideInput{
		Pipeline: d.in.Name, RunID: d.in.RunID, DefaultDatastore: d.in.Settings.DefaultDatastore,
		Step: n.step, Inputs: d.resolveInputs(n.step.Inputs), Records: d.pending,
	}
	d.pending = nil
	switch {
	case d.in.Settings.ForceRerun:
		in.Force = reuse.ReasonForced
	case n.step.NotDeterministic:
		in.Force = reuse.ReasonNotDeterministic
	}
	for _, i := range n.step.Inputs {
		if i.Value.Kind != plan.ValueStepOutput {
			continue
		}
		up := d.byName[i.Value.Step]
		if up == nil {
			continue
		}
		in.Upstream = append(in.Upstream, reuse.Upstream{Input: i.Name, Step: i.Value.Step, Output: i.Value.Output, Ran: up.state.Status != StatusReused})
	}
	return in
}

// decideHere starts the local activity that decides a step on the DAG's
// own worker: one attempt, within decideHereBudget.
func (d *dag) decideHere(ctx workflow.Context, n *node, in reuse.DecideInput) workflow.Future {
	ctx = workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{
		Summary:             "decide whether " + n.step.Path + " reuses an earlier run",
		StartToCloseTimeout: decideHereBudget,
		RetryPolicy:         &temporal.RetryPolicy{MaximumAttempts: 1},
	})
	return workflow.ExecuteLocalActivity(ctx, reuse.DecideReuseHereName, in)
}

// decideReuse starts the activity that computes a step's key and looks for
// a record of it, on a worker of the default queue.
func (d *dag) decideReuse(ctx workflow.Context, n *node, in reuse.DecideInput) workflow.Future {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		Summary:                "decide whether " + n.step.Path + " reuses an earlier run",
		TaskQueue:              plan.DefaultTaskQueue,
		ScheduleToStartTimeout: reuseStartTimeout,
		StartToCloseTimeout:    reuseTimeout,
		HeartbeatTimeout:       decideHeartbeat(n.step),
		RetryPolicy:            &temporal.RetryPolicy{MaximumAttempts: 3},
	})
	return workflow.ExecuteActivity(ctx, reuse.DecideReuseName, in)
}

// settle takes a step's reuse decision: a reused step is done, with the
// recorded outputs; any other stays waiting, to run, and keeps why. A
// decision that failed lets the step run and says so.
func (d *dag) settle(ctx workflow.Context, f workflow.Future, n *node) {
	var dec reuse.Decision
	if err := f.Get(ctx, &dec); err != nil {
		if !isCanceled(err) {
			n.state.Reuse = &Reuse{Reason: undecided(err, decideHeartbeat(n.step))}
		}
		return
	}
	n.decision = &dec
	r := &Reuse{Key: dec.Key, Reason: dec.Reason, Parts: dec.Parts, Was: dec.Was, WasRun: dec.WasRun}
	n.state.Reuse = r
	if dec.Reused == nil {
		return
	}
	r.FromRun, r.FromStep = dec.Reused.Run, dec.Reused.Step
	now := workflow.Now(ctx)
	d.start(n, now)
	n.state.Status = StatusReused
	n.state.Ended = now
	// The step starts no workflow: nothing to ask about quota or spot.
	n.state.Claims, n.state.Spot, n.state.Attempt = false, false, 0
	n.state.WorkflowID = dec.Reused.Run + "/" + dec.Reused.Step
	for _, o := range dec.Reused.Outputs {
		n.setOutput(OutputLocation{Name: o.Name, URI: o.URI})
	}
	n.state.Outputs = d.locations(n)
	n.state.Detail = "reused outputs of run " + dec.Reused.Run
}

// forcedRecordsChange is the GetVersion id of DAGs in which the steps of
// a run with force_rerun (or porch run --no-reuse) leave no record
// (version 1), as Azure ML's rule says: "all child jobs of the force
// rerun pipeline cannot be reused by other jobs". It is asked only in such
// a run, when a step succeeds.
const forcedRecordsChange = "porch-reuse-forced-no-record"

// succeeded keeps a succeeded step's record for the next decision to
// write (or flushRecords, at the end). A step that is not deterministic
// leaves none, nor does a step of a forced run: nothing may reuse them.
func (d *dag) succeeded(ctx workflow.Context, n *node) {
	if n.decision == nil || n.step.NotDeterministic {
		return
	}
	if d.in.Settings.ForceRerun && workflow.GetVersion(ctx, forcedRecordsChange, workflow.DefaultVersion, 1) == 1 {
		return
	}
	rec := reuse.Record{Key: n.decision.Key, Pipeline: d.in.Name, Run: d.in.RunID, Step: n.step.Path, Parts: n.decision.Parts}
	for _, o := range d.locations(n) {
		rec.Outputs = append(rec.Outputs, reuse.Output{Name: o.Name, URI: o.URI})
	}
	d.pending = append(d.pending, rec)
}

// flushRecords writes the records no decision carried, however the run
// ends: a step that succeeded in a failed or canceled run is still
// reusable. Failing to write them loses only later runs' reuse.
func (d *dag) flushRecords(ctx workflow.Context) {
	if len(d.pending) == 0 {
		return
	}
	dctx, _ := workflow.NewDisconnectedContext(ctx)
	dctx = workflow.WithActivityOptions(dctx, workflow.ActivityOptions{
		Summary:                fmt.Sprintf("record %d steps for reuse", len(d.pending)),
		TaskQueue:              plan.DefaultTaskQueue,
		ScheduleToStartTimeout: reuseStartTimeout,
		// Recording lists (and hashes) each output's files, as deciding
		// reads inputs: it is bounded alike.
		StartToCloseTimeout: reuseTimeout,
		RetryPolicy:         &temporal.RetryPolicy{MaximumAttempts: 3},
	})
	in := reuse.RecordInput{DefaultDatastore: d.in.Settings.DefaultDatastore, Records: d.pending}
	d.pending = nil
	if err := workflow.ExecuteActivity(dctx, reuse.RecordReuseName, in).Get(dctx, nil); err != nil {
		workflow.GetLogger(ctx).Warn("porch: steps not recorded for reuse", "error", err)
	}
}

// undecided says why a step's reuse was not decided: the step runs.
func undecided(err error, heartbeat time.Duration) string {
	var te *temporal.TimeoutError
	if errors.As(err, &te) {
		switch te.TimeoutType() {
		case enums.TIMEOUT_TYPE_HEARTBEAT:
			return fmt.Sprintf(ReasonUndecided+"the worker deciding it went silent for %s (it stopped, or lost the server), on every attempt", heartbeat)
		case enums.TIMEOUT_TYPE_START_TO_CLOSE:
			return fmt.Sprintf(ReasonUndecided+"hashing its inputs took longer than %s", reuseTimeout)
		case enums.TIMEOUT_TYPE_SCHEDULE_TO_START:
			return fmt.Sprintf(ReasonUndecided+"no worker of task queue %q took the decision within %s", plan.DefaultTaskQueue, reuseStartTimeout)
		}
	}
	return ReasonUndecided + ErrorMessage(err)
}
