// Package runrecord writes a run's record to its datastore folder as the
// run ends: its steps, their statuses, durations, reasons and outputs. The
// record outlives the server that ran the run (an embedded `porch run`'s,
// or one whose retention dropped the run), so porch job show, list and
// explain read it without a server.
//
// Every pipeline of a run leaves one: the run's own at
// azureml/<run>/porch-run.json in its default datastore, and each nested
// pipeline step's at azureml/<run>/<step path>/porch-run.json. The name has
// a '-' and a '.', which no step name has, so it never meets a step's
// folder.
package runrecord

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"

	"github.com/porch-pipelines/porch/activities/stepio"
	"github.com/porch-pipelines/porch/compiler/plan"
)

// WriteRunRecordName is the activity that writes a record.
const WriteRunRecordName = "WriteRunRecord"

// FileName is the record's file name in a pipeline's folder.
const FileName = "porch-run.json"

// URI is where the record of a run's pipeline prefix ("" for the run
// itself, else a nested pipeline step's path) lives on the datastore ds.
func URI(ds, runID, prefix string) string {
	p := "azureml/" + runID + "/"
	if prefix != "" {
		p += prefix + "/"
	}
	return plan.DatastoreURI(ds, p+FileName)
}

// WriteInput is a record to write: the JSON the workflow built, and where
// it goes.
type WriteInput struct {
	URI    string          `json:"uri"`
	Record json.RawMessage `json:"record,omitempty"`
	// Gzip is the record's JSON gzipped, instead of Record: a pipeline of
	// thousands of steps sends its record so, under Temporal's payload
	// limit.
	Gzip []byte `json:"gzip,omitempty"`
}

// Activities writes records through a worker's step I/O, on every kind of
// datastore it reaches.
type Activities struct {
	*stepio.Host
}

// Register registers the activity under its explicit name.
func (a *Activities) Register(r worker.ActivityRegistry) {
	r.RegisterActivityWithOptions(a.WriteRunRecord, activity.RegisterOptions{Name: WriteRunRecordName})
}

// WriteRunRecord writes a record, replacing any earlier one of the same
// run (a resumed run ends again).
func (a *Activities) WriteRunRecord(ctx context.Context, in WriteInput) error {
	if len(in.Gzip) > 0 {
		zr, err := gzip.NewReader(bytes.NewReader(in.Gzip))
		if err == nil {
			in.Record, err = io.ReadAll(zr)
		}
		if err != nil {
			return temporal.NewNonRetryableApplicationError(fmt.Sprintf("the record for %s is not gzipped JSON: %v", in.URI, err), "BadRecord", nil)
		}
	}
	// Indented, for whoever opens the file.
	var data bytes.Buffer
	if err := json.Indent(&data, in.Record, "", "  "); err != nil {
		return temporal.NewNonRetryableApplicationError(fmt.Sprintf("the record for %s is not JSON: %v", in.URI, err), "BadRecord", nil)
	}
	data.WriteByte('\n')
	if err := a.WriteFile(ctx, in.URI, data.Bytes()); err != nil {
		return fmt.Errorf("write the run record: %w", err)
	}
	return nil
}
