package workflows

import (
	"go.temporal.io/sdk/workflow"

	"github.com/porch-pipelines/porch/telemetry"
)

// Step metrics (package telemetry) go through workflow.GetMetricsHandler:
// it records nothing while a workflow replays and adds nothing to its
// history, so counting steps changes no run's commands.

// countersAtZero makes the step counters of each compute and step type of
// the run's steps exist at 0 before any step starts, so that the first
// failure of a kind shows in Prometheus as an increase.
func (d *dag) countersAtZero(ctx workflow.Context) {
	type kind struct{ compute, stepType string }
	seen := map[kind]bool{}
	for _, n := range d.nodes {
		k := kind{n.step.Compute, string(n.step.Type)}
		if seen[k] {
			continue
		}
		seen[k] = true
		telemetry.StepCountersAtZero(workflow.GetMetricsHandler(ctx), k.compute, k.stepType, d.in.Experiment)
	}
}

// countStarted counts a step of the DAG that starts.
func (d *dag) countStarted(ctx workflow.Context, n *node) {
	telemetry.StepStarted(workflow.GetMetricsHandler(ctx), n.step.Compute, string(n.step.Type), d.in.Experiment)
}

// countEnded counts a step that ended, with its status and duration.
func (d *dag) countEnded(ctx workflow.Context, n *node) {
	telemetry.StepEnded(workflow.GetMetricsHandler(ctx), n.step.Compute, string(n.step.Type), d.in.Experiment,
		string(n.state.Status), n.state.Ended.Sub(n.state.Started))
}

// countReused counts a step an earlier execution of the run succeeded.
func (d *dag) countReused(ctx workflow.Context, n *node) {
	telemetry.StepReused(workflow.GetMetricsHandler(ctx), n.step.Compute, string(n.step.Type), d.in.Experiment)
}
