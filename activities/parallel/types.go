package parallel

import (
	"fmt"
	"time"

	"github.com/porch-pipelines/porch/activities/stepio"
	"github.com/porch-pipelines/porch/compiler/plan"
)

// Activity type names of parallel steps.
const (
	PlanMiniBatchesName        = "PlanMiniBatches"
	RunMiniBatchName           = "RunMiniBatch"
	RunMiniBatchesName         = "RunMiniBatches"
	ListPendingMiniBatchesName = "ListPendingMiniBatches"
	ReportParallelProgressName = "ReportParallelProgress"
	FinishParallelName         = "FinishParallel"
	MonitorResourcesName       = "MonitorResources"
)

// Application error types of parallel steps.
const (
	// MiniBatchFailedType is a mini-batch whose run() raised, returned too
	// few results, timed out or crashed its process. It is retried as
	// retry_settings says. Its details are one MiniBatchFailure.
	MiniBatchFailedType = "MiniBatchFailed"
	// EntryScriptInitFailedType is an entry script whose init() failed (or
	// whose imports did): no mini-batch can run, so the step fails at once.
	EntryScriptInitFailedType = "EntryScriptInitFailed"
)

// ParallelStepRef names one parallel step's files: what every mini-batch
// activity carries instead of the step's settings, which the planner wrote
// next to the manifest.
type ParallelStepRef struct {
	RunID     string `json:"run_id"`
	StepPath  string `json:"step_path"`
	Datastore string `json:"datastore"`
	// Digest identifies the manifest the planner wrote; a worker's cached
	// state for another digest is stale.
	Digest string `json:"digest,omitempty"`
}

// artifactsURI is the step's artifacts folder, on the run's datastore.
func (r ParallelStepRef) artifactsURI() string {
	return stepio.StepArtifactsURI(r.Datastore, r.RunID, r.StepPath)
}

// PlanMiniBatchesInput is a parallel step as the workflow resolved it.
type PlanMiniBatchesInput struct {
	RunID            string        `json:"run_id"`
	StepPath         string        `json:"step_path"`
	DefaultDatastore string        `json:"default_datastore"`
	Parallel         plan.Parallel `json:"parallel"`
	// Inputs and Outputs are resolved as for a command step.
	Inputs  []plan.Input  `json:"inputs,omitempty"`
	Outputs []plan.Output `json:"outputs,omitempty"`
	// SubmittedBy is the user who submitted the run.
	SubmittedBy string `json:"submitted_by,omitempty"`
}

// ParallelPlan is what planning found: counts and a reference, never the
// mini-batches themselves.
type ParallelPlan struct {
	Ref       ParallelStepRef `json:"ref"`
	Batches   int             `json:"batches"`
	Items     int64           `json:"items"`
	Files     int             `json:"files"`
	Bytes     int64           `json:"bytes"`
	Tabular   bool            `json:"tabular,omitempty"`
	Instances int             `json:"instances"`
	// PerInstance is max_concurrency_per_instance, or the planning
	// worker's CPU cores when the step left it unset.
	PerInstance int `json:"per_instance"`
	// Done counts the mini-batches an earlier attempt of this step already
	// processed for the same manifest: they are not run again.
	Done int `json:"done,omitempty"`
}

// MiniBatchInput asks a worker to process one mini-batch.
type MiniBatchInput struct {
	Ref   ParallelStepRef `json:"ref"`
	Index int             `json:"index"`
	// PriorAttempts are the attempts the mini-batch used in earlier
	// activities (on a worker that was lost): this activity's attempts
	// count on from them.
	PriorAttempts int32 `json:"prior_attempts,omitempty"`
}

// MiniBatchesInput asks a worker to process several short mini-batches one
// after another, in one activity: the workflow groups them when each takes
// so little time that a server round trip per mini-batch would compete
// with run() for the cores.
type MiniBatchesInput struct {
	Ref     ParallelStepRef `json:"ref"`
	Indexes []int           `json:"indexes"`
}

// MiniBatchesResult is what a group of mini-batches did: each one either
// succeeded or failed its first attempt (the workflow runs a failed one
// again on its own, with the retries retry_settings leaves).
type MiniBatchesResult struct {
	Succeeded []MiniBatchResult `json:"succeeded,omitempty"`
	Failed    []FailedMiniBatch `json:"failed,omitempty"`
}

// FailedMiniBatch is a failed attempt of a mini-batch in a group: the
// details and the message a RunMiniBatch attempt would fail with.
type FailedMiniBatch struct {
	Failure MiniBatchFailure `json:"failure"`
	Message string           `json:"message"`
}

// MiniBatchBeat is a running mini-batch's heartbeat: what the workflow
// reads when its worker vanishes, and what Temporal's UI shows as the
// pending activity's details.
type MiniBatchBeat struct {
	Items   int   `json:"items"`
	Attempt int32 `json:"attempt"`
	// Index is the mini-batch a group was running (RunMiniBatches).
	Index int `json:"index,omitempty"`
}

// MiniBatchResult is a processed mini-batch.
type MiniBatchResult struct {
	Index    int    `json:"index"`
	Items    int    `json:"items"`
	Returned int    `json:"returned"`
	Node     string `json:"node"`
	Process  string `json:"process,omitempty"`
	Attempt  int32  `json:"attempt"`
	// Skipped is set when an earlier attempt of the step had already
	// processed the mini-batch.
	Skipped bool `json:"skipped,omitempty"`
	// Format is how run()'s result was saved for append_row_to: "csv" (a
	// DataFrame with its header) or "lines".
	Format string `json:"format,omitempty"`
	// ElapsedMs is how long run() took, what the workflow sizes groups of
	// mini-batches by.
	ElapsedMs int64 `json:"elapsed_ms,omitempty"`
}

// MiniBatchFailure details a failed mini-batch attempt.
type MiniBatchFailure struct {
	Index    int    `json:"index"`
	Kind     string `json:"kind"`
	Items    int    `json:"items"`
	Returned int    `json:"returned"`
	Node     string `json:"node"`
	Process  string `json:"process,omitempty"`
	Attempt  int32  `json:"attempt"`
	// Log is the entry-script log of the process that failed.
	Log string `json:"log,omitempty"`
}

// ListPendingInput asks for the mini-batches from From on that are not done.
type ListPendingInput struct {
	Ref   ParallelStepRef `json:"ref"`
	From  int             `json:"from"`
	Limit int             `json:"limit"`
}

// PendingMiniBatches is a page of mini-batches still to process.
type PendingMiniBatches struct {
	Indexes []int `json:"indexes,omitempty"`
	// Next is where the next page starts; Next == the manifest's length
	// means there is none.
	Next int `json:"next"`
}

// ParallelCounters are a parallel step's progress.
type ParallelCounters struct {
	Batches     int   `json:"batches"`
	Succeeded   int   `json:"succeeded"`
	Failed      int   `json:"failed"`
	Skipped     int   `json:"skipped,omitempty"`
	Running     int   `json:"running"`
	Items       int64 `json:"items"`
	FailedItems int64 `json:"failed_items"`
	// ShortItems are the items of succeeded mini-batches that run()
	// returned nothing for, which error_threshold: -1 lets pass.
	ShortItems int64 `json:"short_items,omitempty"`
}

// shortNote says how many items returned nothing, when any did.
func (c ParallelCounters) shortNote() string {
	if c.ShortItems == 0 {
		return ""
	}
	return fmt.Sprintf(", %d returned nothing (error_threshold: -1)", c.ShortItems)
}

// Processed is how many mini-batches have ended.
func (c ParallelCounters) Processed() int { return c.Succeeded + c.Failed }

// ProgressInput records a parallel step's progress in its logs.
type ProgressInput struct {
	Ref      ParallelStepRef  `json:"ref"`
	Started  time.Time        `json:"started"`
	At       time.Time        `json:"at"`
	Counters ParallelCounters `json:"counters"`
}

// FinishParallelInput ends a parallel step.
type FinishParallelInput struct {
	Progress ProgressInput `json:"progress"`
	// Succeeded says whether the step succeeded; Reason is why it failed.
	Succeeded bool   `json:"succeeded"`
	Reason    string `json:"reason,omitempty"`
	// ParentPath is the enclosing pipeline's path, where
	// copy_logs_to_parent copies the step's summary ("" = the root run).
	ParentPath string `json:"parent_path,omitempty"`
}

// FinishParallelResult says where the step's outputs landed.
type FinishParallelResult struct {
	LogDir  string                  `json:"log_dir"`
	Outputs []stepio.OutputLocation `json:"outputs,omitempty"`
}

// MonitorInput samples one node's resource usage while a step runs.
type MonitorInput struct {
	Ref             ParallelStepRef `json:"ref"`
	Node            string          `json:"node"`
	IntervalSeconds int             `json:"interval_seconds"`
}
