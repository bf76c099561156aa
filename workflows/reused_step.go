package workflows

import (
	"fmt"
	"strings"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/porch-pipelines/porch/activities/reuse"
	"github.com/porch-pipelines/porch/compiler/plan"
)

// ReusedStepName is the workflow type of a step that reused an earlier
// run's outputs: it runs nothing, and exists so that Temporal's CLI and UI
// show the step where its run's other steps are, with PorchStatus
// "reused" and a summary naming the run it reused.
const ReusedStepName = "ReusedStep"

// PorchReused is the PorchStatus of a ReusedStep.
const PorchReused = "reused"

// reusedStepChange is the GetVersion id of DAGs that start a ReusedStep
// for each step a reuse decision reused (version 1). It is asked only
// when a step is reused.
const reusedStepChange = "reused-step-workflow"

// ReusedStepInput names the step whose outputs were reused.
type ReusedStepInput struct {
	RunID    string `json:"run_id"`
	StepPath string `json:"step_path"`
	FromRun  string `json:"from_run"`
	FromStep string `json:"from_step"`
}

// reusedStatusChange is the GetVersion id of DAGs that start a
// ReusedStep with its PorchStatus already set (version 1), having asked
// once a run whether the server has PorchStatus: the ReusedStep then runs
// nothing, and costs one workflow task. It is asked only when a step is
// reused.
const reusedStatusChange = "reused-step-status-at-start"

// ReusedStep sets its PorchStatus to reused, unless its DAG started it
// so, and ends.
func ReusedStep(ctx workflow.Context, in ReusedStepInput) error {
	if _, set := workflow.GetTypedSearchAttributes(ctx).GetKeyword(keyStatus); set {
		return nil
	}
	upsertStatus(ctx, PorchReused)
	return nil
}

// statusAtStart says whether a DAG that has reusedStatusChange sets a
// ReusedStep's PorchStatus as it starts it: when the server has
// PorchStatus, which the DAG asks once.
func (r *dagRun) statusAtStart() bool {
	if workflow.GetVersion(r.ctx, reusedStatusChange, workflow.DefaultVersion, 1) != 1 {
		return false
	}
	return r.statusRegistered()
}

// statusRegistered says whether the server has PorchStatus, asking it the
// first time (a local activity).
func (r *dagRun) statusRegistered() bool {
	if r.statusKnown == nil {
		// A failed question is taken as not registered: each ReusedStep
		// asks for itself, and command steps go without.
		registered := porchStatusRegistered(r.ctx)
		r.statusKnown = &registered
	}
	return *r.statusKnown
}

// reused starts the ReusedStep of a reused step, in a DAG that has the
// change; the run waits for it, which takes one workflow task.
func (r *dagRun) reused(s *node) {
	ctx, d := r.ctx, r.d
	if workflow.GetVersion(ctx, reusedStepChange, workflow.DefaultVersion, 1) != 1 {
		return
	}
	from := s.state.Reuse
	attrs := d.stepAttributes(s.step)
	if r.statusAtStart() {
		attrs = temporal.NewSearchAttributes(append(stepUpdates(d.keys(), s.step.Path, s.step.Type, s.step.Compute),
			keyStatus.ValueSet(PorchReused))...)
	}
	cctx := workflow.WithChildOptions(ctx, workflow.ChildWorkflowOptions{
		WorkflowID:            d.in.RunID + "/" + s.step.Path,
		TaskQueue:             plan.DefaultTaskQueue,
		TypedSearchAttributes: attrs,
		StaticSummary:         s.step.Path + " · reused outputs of run " + from.FromRun,
		StaticDetails:         cut(reuseDetails(d.in.RunID, s)+outputDetails(s.state.Outputs), maxDetails),
	})
	f := workflow.ExecuteChildWorkflow(cctx, ReusedStepName, ReusedStepInput{
		RunID: d.in.RunID, StepPath: s.step.Path, FromRun: from.FromRun, FromStep: from.FromStep,
	})
	r.wait(f, func(f workflow.Future) {
		if err := f.Get(ctx, nil); err != nil {
			// The step's outputs are reused all the same; only its place
			// in Temporal's lists is missing.
			workflow.GetLogger(ctx).Warn("porch: the reused step's workflow did not run", "step", s.step.Path, "error", err)
		}
	})
}

// reuseDetails is what a step's details in Temporal's UI say first about
// its reuse decision: whose outputs a reused step took, or why a step ran
// rather than reuse them; "" for a step no decision was made for.
func reuseDetails(runID string, n *node) string {
	r := n.state.Reuse
	if r == nil {
		return ""
	}
	explain := fmt.Sprintf("`porch job explain %s %s` compares its reuse key, part by part, with the latest record.", runID, n.step.Path)
	if n.state.Status == StatusReused {
		return fmt.Sprintf("**Reused** the outputs of step `%s` of run `%s`: nothing that decides its result changed since (key `%s`). %s\n\n",
			r.FromStep, r.FromRun, reuse.Short(r.Key), explain)
	}
	if r.Reason == "" {
		return ""
	}
	return fmt.Sprintf("**Ran** rather than reuse an earlier run's outputs: %s. %s\n\n", r.Reason, explain)
}

// outputDetails lists a reused step's outputs, where they are.
func outputDetails(outs []OutputLocation) string {
	var lines []string
	for _, o := range outs {
		lines = append(lines, fmt.Sprintf("- `%s`: `%s`", o.Name, o.URI))
	}
	if len(lines) == 0 {
		return ""
	}
	return "**Outputs**\n\n" + strings.Join(lines, "\n") + "\n"
}
