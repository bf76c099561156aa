package workflows

import (
	"fmt"
	"hash/fnv"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/porch-pipelines/porch/activities/command"
	"github.com/porch-pipelines/porch/activities/spread"
	"github.com/porch-pipelines/porch/activities/stepio"
	"github.com/porch-pipelines/porch/compiler/plan"
)

// spreadChange is the GetVersion id of distributed command steps whose
// instances run on several workers: version 1 holds instance_count
// instances of the step's type (HoldInstance), each on a worker with room
// for one, and runs one RunCommand per instance on its node's queue, where
// DefaultVersion ran every instance on one worker.
const spreadChange = "command-instances"

// spreads says whether the step's instances run on several workers: a
// pytorch or mpi step of more than one instance on an instance type's
// queue (whose workers count capacity), from version 1 on.
func spreads(ctx workflow.Context, in CommandStepInput) bool {
	c := in.Run.Command
	if !c.Resources.OnInstanceType() || c.Resources.Instances() < 2 || c.Distribution == nil ||
		!slices.Contains(command.SpreadDistributions(), strings.ToLower(c.Distribution.Type)) {
		return false
	}
	return workflow.GetVersion(ctx, spreadChange, workflow.DefaultVersion, 1) == 1
}

// runSpread holds the step's instances, then runs instance i on the node
// holding it, with instance 0's node as the master. The step fails with
// its first failing instance, which stops the others; it returns instance
// 0's result. An instance whose node is lost fails the step: its ranks
// cannot rejoin a running job.
func runSpread(ctx workflow.Context, in CommandStepInput, opts workflow.ActivityOptions) (command.RunCommandResult, error) {
	var res command.RunCommandResult
	n := in.Run.Command.Resources.Instances()
	holdCtx, releaseHolds := workflow.WithCancel(ctx)
	defer releaseHolds()
	nodes, err := holdInstances(ctx, holdCtx, opts.TaskQueue, n)
	if err != nil {
		return res, err
	}
	workflow.SetCurrentDetails(ctx, fmt.Sprintf("running %d instances, instance 0 on %s", n, nodes[0].Node))
	runCtx, stopRuns := workflow.WithCancel(ctx)
	defer stopRuns()
	sel := workflow.NewSelector(ctx)
	var failure error
	for i, node := range nodes {
		run := in.Run
		run.Instance = &command.InstanceAssignment{Index: i, Count: n, MasterAddr: nodes[0].Address, MasterPort: nodes[0].Port}
		o := opts
		o.Summary = oneLine(fmt.Sprintf("run %s (instance %d of %d): %s", in.Run.StepPath, i, n, oneLine(in.Run.Command.Template.Source, maxCommand)), maxSummary)
		o.TaskQueue = plan.NodeTaskQueue(node.Node)
		o.ScheduleToStartTimeout = nodeStartTimeout
		o.RetryPolicy = &temporal.RetryPolicy{MaximumAttempts: 1}
		f := workflow.ExecuteActivity(workflow.WithActivityOptions(runCtx, o), command.RunCommandName, run)
		sel.AddFuture(f, func(f workflow.Future) {
			var r command.RunCommandResult
			err := f.Get(ctx, &r)
			switch {
			case err != nil && failure == nil && !isCanceled(err):
				failure = err
				stopRuns()
			case err == nil && i == 0:
				res = r
			}
		})
	}
	for range nodes {
		sel.Select(ctx)
	}
	if failure == nil && ctx.Err() != nil {
		failure = temporal.NewCanceledError()
	}
	return res, failure
}

// Gang scheduling: a step holding some of its instances while another
// step holds the rest would wait for ever, so a step that cannot hold all
// of them within holdPatience of the first lets them go and tries again
// after a random pause of up to holdBackoff.
// After holdTries tries the step fails, saying how many instances it
// could hold at once.
const (
	holdPatience = 2 * time.Minute
	holdBackoff  = 30 * time.Second
	holdTries    = 3
)

// holdInstances holds n instances of the step's type on queue, every one
// at once (gang scheduling), and returns the nodes holding them. Its holds
// run until holdCtx is cancelled.
func holdInstances(ctx, holdCtx workflow.Context, queue string, n int) ([]spread.InstanceReady, error) {
	most := 0
	for try := 0; ; try++ {
		tryCtx, letGo := workflow.WithCancel(holdCtx)
		nodes, held, err := tryHold(ctx, tryCtx, queue, n, try)
		if err != nil || held == n {
			return nodes, err
		}
		letGo()
		most = max(most, held)
		if try+1 == holdTries {
			return nil, temporal.NewNonRetryableApplicationError(fmt.Sprintf(
				"the step's %d instances must run at once, and the workers of task queue %q held at most %d of them in %d tries: "+
					"start more workers of the instance type (`porch worker --compute ... --instance-type ...`), give them more capacity, or lower instance_count to %d",
				n, queue, most, holdTries, max(most, 1)), stepio.InvalidStepType, nil)
		}
		if err := sleep(ctx, holdPause(ctx, try), "pause before holding the instances again"); err != nil {
			return nil, temporal.NewCanceledError()
		}
	}
}

// holdPause is how long a step waits before its next try: a pseudo-random
// part of holdBackoff, from the step's workflow id and the try, so that
// two steps that let go at once try again at different times, and replay
// finds the same pause.
func holdPause(ctx workflow.Context, try int) time.Duration {
	h := fnv.New64a()
	_, _ = h.Write([]byte(workflow.GetInfo(ctx).WorkflowExecution.ID + "/" + strconv.Itoa(try)))
	return time.Duration(h.Sum64() % uint64(holdBackoff))
}

// tryHold starts n HoldInstance activities and waits until each holds an
// instance, or until holdPatience has passed since the first did while
// others still wait. It returns how many it held.
func tryHold(ctx, holdCtx workflow.Context, queue string, n, try int) ([]spread.InstanceReady, int, error) {
	hold := workflow.ActivityOptions{
		TaskQueue:           queue,
		StartToCloseTimeout: noTimeout,
		HeartbeatTimeout:    heartbeatTimeout,
		RetryPolicy:         &temporal.RetryPolicy{MaximumAttempts: infraAttempts},
	}
	sel := workflow.NewSelector(ctx)
	var failure error
	for i := range n {
		hold.Summary = fmt.Sprintf("hold instance %d of %d (try %d)", i, n, try+1)
		f := workflow.ExecuteActivity(workflow.WithActivityOptions(holdCtx, hold),
			spread.HoldInstanceName, spread.HoldInstanceInput{Slot: i, Try: try})
		sel.AddFuture(f, func(f workflow.Future) {
			if err := f.Get(ctx, nil); err != nil && failure == nil && !isCanceled(err) {
				failure = err
			}
		})
	}
	nodes := make([]spread.InstanceReady, n)
	held, impatient := 0, false
	timerCtx, stopTimer := workflow.WithCancel(ctx)
	defer stopTimer()
	sel.AddReceive(workflow.GetSignalChannel(ctx, spread.InstanceReadySignal), func(c workflow.ReceiveChannel, _ bool) {
		var ready spread.InstanceReady
		c.Receive(ctx, &ready)
		if ready.Slot < 0 || ready.Slot >= n || ready.Try != try {
			return // a hold of an earlier try, let go
		}
		if nodes[ready.Slot].Node == "" {
			held++
		}
		nodes[ready.Slot] = ready
		workflow.SetCurrentDetails(ctx, fmt.Sprintf("holding %d of %d instances (try %d of %d)", held, n, try+1, holdTries))
		if held == 1 && n > 1 {
			sel.AddFuture(newTimer(timerCtx, holdPatience, "hold patience: all instances or let go"), func(f workflow.Future) {
				impatient = f.Get(ctx, nil) == nil
			})
		}
	})
	for held < n && failure == nil && ctx.Err() == nil && !impatient {
		sel.Select(ctx)
	}
	switch {
	case failure != nil:
		return nil, 0, failure
	case ctx.Err() != nil:
		return nil, 0, temporal.NewCanceledError()
	}
	return nodes, held, nil
}
