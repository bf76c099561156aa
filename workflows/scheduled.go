package workflows

import (
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/porch-pipelines/porch/compiler/plan"
)

// Search attributes Temporal sets on the workflows a schedule starts.
const (
	// AttrScheduledBy is the id of the schedule that started a run.
	AttrScheduledBy = "TemporalScheduledById"
	// AttrScheduledStart is the time the schedule fired for it.
	AttrScheduledStart = "TemporalScheduledStartTime"
)

var (
	keyScheduledBy    = temporal.NewSearchAttributeKeyKeyword(AttrScheduledBy)
	keyScheduledStart = temporal.NewSearchAttributeKeyTime(AttrScheduledStart)
)

// scheduledChange is the GetVersion id of root runs a schedule started
// whose inputs hold ${{name}} or ${{creation_context.trigger_time}}:
// version 1 fills them with the run's id and the time the schedule fired,
// as Azure ML fills a scheduled job's. Other runs record no marker.
const scheduledChange = "scheduled-inputs"

// fillScheduled fills a scheduled run's inputs. A run no schedule started
// keeps its inputs as written.
func fillScheduled(ctx workflow.Context, in *PipelineInput) {
	if in.Prefix != "" || !plan.HasScheduledRefs(in.Inputs) {
		return
	}
	sa := workflow.GetTypedSearchAttributes(ctx)
	if _, ok := sa.GetKeyword(keyScheduledBy); !ok {
		return
	}
	fired, ok := sa.GetTime(keyScheduledStart)
	if !ok || fired.IsZero() {
		fired = workflow.GetInfo(ctx).WorkflowStartTime
	}
	if workflow.GetVersion(ctx, scheduledChange, workflow.DefaultVersion, 1) == workflow.DefaultVersion {
		return
	}
	in.Inputs = plan.FillScheduled(in.Inputs, in.RunID, fired)
}
