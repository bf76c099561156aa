package workflows

import (
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/porch-pipelines/porch/compiler/plan"
)

// startedChange is the GetVersion id of root runs that complete what a
// plain Temporal client did not give them at start (porch compile -o
// start-input, then temporal workflow start): version 1 takes the workflow
// id as the run id when the input has none, and upserts porch's search
// attributes the run lacks, so porch job list and show find it.
// DefaultVersion ran such a run with an empty run id and no attributes.
const startedChange = "started-from-temporal"

// adoptRun completes a root run started without porch's client. A run porch
// started has its run id and every attribute already: it records no marker
// and upserts nothing, so its history stays as it was.
func adoptRun(ctx workflow.Context, in *PipelineInput) error {
	if in.Prefix != "" {
		// Nested pipelines and sweep trials get both from their parent.
		return nil
	}
	runID := in.RunID
	if runID == "" {
		runID = workflow.GetInfo(ctx).WorkflowExecution.ID
	}
	missing := missingAttributes(workflow.GetTypedSearchAttributes(ctx),
		rootAttributes(runKeys{runID, in.Name, in.Experiment, in.Settings.SubmittedBy}))
	if in.RunID != "" && len(missing) == 0 {
		return nil
	}
	if workflow.GetVersion(ctx, startedChange, workflow.DefaultVersion, 1) == workflow.DefaultVersion {
		return nil
	}
	in.RunID = runID
	if len(missing) == 0 {
		return nil
	}
	return workflow.UpsertTypedSearchAttributes(ctx, missing...)
}

// keyword is one keyword search attribute and its value.
type keyword struct {
	key   temporal.SearchAttributeKeyKeyword
	value string
}

// rootAttributes are a root run's search attributes.
func rootAttributes(k runKeys) []keyword {
	return append(k.keywords(), keyword{keyStepType, string(plan.StepPipeline)})
}

// missingAttributes returns updates setting the attributes of want that
// have lacks or holds with another value.
func missingAttributes(have temporal.SearchAttributes, want []keyword) []temporal.SearchAttributeUpdate {
	var out []temporal.SearchAttributeUpdate
	for _, w := range want {
		if v, ok := have.GetKeyword(w.key); !ok || v != w.value {
			out = append(out, w.key.ValueSet(w.value))
		}
	}
	return out
}

// updatesOf turns keywords into search attribute updates.
func updatesOf(kws []keyword) []temporal.SearchAttributeUpdate {
	out := make([]temporal.SearchAttributeUpdate, len(kws))
	for i, kw := range kws {
		out[i] = kw.key.ValueSet(kw.value)
	}
	return out
}
