package workflows

import (
	"encoding/json"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/porch-pipelines/porch/activities/runrecord"
	"github.com/porch-pipelines/porch/compiler/plan"
)

// runRecordChange is the GetVersion id of pipelines that write their
// record as they end (version 1). Histories recorded before it end
// without the activity, and replay so.
const runRecordChange = "run-record"

// RunRecordVersion is the format of RunRecord.
const RunRecordVersion = 1

// Run statuses a record holds, in the words porch job list uses for a
// run's Temporal status.
const (
	RecordCompleted = "completed"
	RecordFailed    = "failed"
	RecordCanceled  = "canceled"
)

// RunRecord is what a pipeline of a run leaves in its datastore folder as
// it ends (see package runrecord): the run's own pipeline, or a nested
// pipeline step's (Prefix). A run terminated from Temporal writes none.
type RunRecord struct {
	Version     int    `json:"version"`
	Run         string `json:"run"`
	Pipeline    string `json:"pipeline"`
	Experiment  string `json:"experiment,omitempty"`
	SubmittedBy string `json:"submitted_by,omitempty"`
	// Prefix is the path of the nested pipeline step this record is of,
	// "" for the run's own.
	Prefix           string `json:"prefix,omitempty"`
	DefaultDatastore string `json:"default_datastore"`
	// Status is completed, failed or canceled.
	Status  string    `json:"status"`
	Started time.Time `json:"started"`
	Ended   time.Time `json:"ended"`
	// Error is why the pipeline failed, and FailedStep the step it failed
	// on first.
	Error      string `json:"error,omitempty"`
	FailedStep string `json:"failed_step,omitempty"`
	// Steps are the pipeline's own steps as the steps query answered at
	// the end: statuses, durations, attempts, errors, reuse decisions and
	// output locations. A nested pipeline's steps are in its own record.
	Steps []StepState `json:"steps"`
	// Outputs are the pipeline's outputs, when it succeeded.
	Outputs []OutputLocation `json:"outputs,omitempty"`
}

// recordTimeout bounds writing a record, and recordStartTimeout how long
// it waits for a worker of the default queue; a record that is not
// written is a warning, never a failed run.
const (
	recordTimeout      = time.Minute
	recordStartTimeout = time.Minute
)

// writeRecordInput is runrecord.WriteInput as the workflow sends it: the
// record as a value, which the payload converter encodes as the JSON the
// activity takes as it is.
type writeRecordInput struct {
	URI    string     `json:"uri"`
	Record *RunRecord `json:"record,omitempty"`
	// Gzip is the record's JSON gzipped, instead of Record, for a record
	// of more than maxPlainRecord steps.
	Gzip []byte `json:"gzip,omitempty"`
}

// maxPlainRecord is the most steps a record passes as it is, and
// maxPlainRecordBytes its most JSON: a record of thousands of steps, or of
// fewer steps with many outputs, would pass Temporal's payload limit. A
// record gzipped where it was once plain replays all the same: replay
// compares an activity's type, not its input.
const (
	maxPlainRecord      = 1000
	maxPlainRecordBytes = 256 << 10
)

// writeRunRecord writes the pipeline's record from its state at the end,
// whatever the end (res and err are what the pipeline returns; failed
// the step it failed on first). This is the one place a pipeline's end is
// recorded: the last thing a Pipeline does before it returns.
func (d *dag) writeRunRecord(ctx workflow.Context, res PipelineResult, failed string, err error) {
	if workflow.GetVersion(ctx, runRecordChange, workflow.DefaultVersion, 1) != 1 {
		return
	}
	rec := RunRecord{
		Version: RunRecordVersion, Run: d.in.RunID, Pipeline: d.in.Name, Experiment: d.in.Experiment,
		SubmittedBy: d.in.Settings.SubmittedBy, Prefix: d.in.Prefix, DefaultDatastore: d.datastore(),
		Status: RecordCompleted, Started: d.started, Ended: workflow.Now(ctx),
		Steps: d.states(), Outputs: res.Outputs,
	}
	switch {
	case isCanceled(err):
		rec.Status = RecordCanceled
	case err != nil:
		rec.Status, rec.Error, rec.FailedStep = RecordFailed, ErrorMessage(err), failed
	}
	// The run may have been canceled: the record is written all the same.
	dctx, _ := workflow.NewDisconnectedContext(ctx)
	dctx = workflow.WithActivityOptions(dctx, workflow.ActivityOptions{
		Summary:                "write the run record",
		TaskQueue:              plan.DefaultTaskQueue,
		ScheduleToStartTimeout: recordStartTimeout,
		StartToCloseTimeout:    recordTimeout,
		RetryPolicy:            &temporal.RetryPolicy{MaximumAttempts: 3},
	})
	in := writeRecordInput{URI: runrecord.URI(rec.DefaultDatastore, d.in.RunID, d.in.Prefix), Record: &rec}
	if len(rec.Steps) > maxPlainRecord || !fitsPlain(rec) {
		gz, err := gzipJSON(rec)
		if err != nil {
			workflow.GetLogger(ctx).Warn("porch: the run's record was not written", "error", err)
			return
		}
		in.Record, in.Gzip = nil, gz
	}
	if err := workflow.ExecuteActivity(dctx, runrecord.WriteRunRecordName, in).Get(dctx, nil); err != nil {
		workflow.GetLogger(ctx).Warn("porch: the run's record was not written: porch job show reads it only from the server",
			"uri", in.URI, "error", err)
	}
}

// datastore is the pipeline's default datastore.
func (d *dag) datastore() string {
	if d.in.Settings.DefaultDatastore == "" {
		return plan.DefaultDatastore
	}
	return d.in.Settings.DefaultDatastore
}

// fitsPlain says whether a record's JSON is at most maxPlainRecordBytes:
// a pure function of the record (see gzipJSON).
//
//workflowcheck:ignore
func fitsPlain(rec RunRecord) bool {
	js, err := json.Marshal(rec)
	return err == nil && len(js) <= maxPlainRecordBytes
}
