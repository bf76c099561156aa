package workflows

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/porch-pipelines/porch/activities/reuse"
	"github.com/porch-pipelines/porch/compiler/plan"
)

// A DAG that scales: a Pipeline whose plan is stored (PipelineInput.Plan)
// continues as new before its history nears Temporal's limits. It starts
// steps while its history has room for them and the steps it runs, then
// stops starting, lets the running ones end (continue-as-new cannot carry
// running children), and continues with its state: the steps that are no
// longer waiting, the records not yet written and its first failure.
// Queries answer from the state in every execution; the run record is
// written once, by the execution that ends the run.

// dagChange is the GetVersion id of DAGs that load a stored plan and
// continue as new (version 1). It is asked only in a run whose input
// names a stored plan, so histories recorded before replay as they ran.
const dagChange = "porch-dag-by-reference"

// dagEventBudget is the history length past which a DAG starts no more
// steps; eventsPerStep bounds the events one step adds to the DAG's
// history (its reuse decision, its child workflow and the workflow tasks
// between them), so the steps running when it stops fit under Temporal's
// warning at 10,240 events. historyByteBudget is the same bound in bytes.
const (
	dagEventBudget    = 8000
	eventsPerStep     = 16
	historyByteBudget = 4 << 20
	stepBytes         = 8 << 10
)

// dagState is what a Pipeline carries across continue-as-new.
type dagState struct {
	// Started is when the run's first execution started.
	Started time.Time `json:"started"`
	// Executions counts the executions before this one.
	Executions int `json:"executions"`
	// Steps are the states of the steps that are not waiting.
	Steps []StepState `json:"steps"`
	// Pending are records of succeeded steps not yet written.
	Pending []reuse.Record `json:"pending,omitempty"`
	// FirstFailed is the step the run failed on first, FirstError its
	// error (a run that continues on step failure).
	FirstFailed string `json:"first_failed,omitempty"`
	FirstError  string `json:"first_error,omitempty"`
}

// full says whether the run's history has no room for one more step
// besides those running: it then starts none and drains, to continue as
// new. A step's bytes are estimated from the steps this execution started
// (its first events, which carry the state and the plan, excepted). A run
// without a stored plan never continues.
func (r *dagRun) full() bool {
	if !r.continues {
		return false
	}
	info := workflow.GetInfo(r.ctx)
	if info.GetContinueAsNewSuggested() {
		return true
	}
	n, size := info.GetCurrentHistoryLength(), info.GetCurrentHistorySize()
	if r.launched == 0 {
		r.baseSize = size
	}
	perStep := stepBytes
	if r.launched >= 8 {
		perStep = max(perStep, (size-r.baseSize)/r.launched)
	}
	steps := r.running + 1
	return n+eventsPerStep*steps > r.budget || size+perStep*steps > historyByteBudget
}

// continuesAsNew says whether the run ends this execution by continuing
// as new: it drained for room, it still runs, and steps are left.
func (r *dagRun) continuesAsNew() bool {
	if !r.draining || !r.starting() {
		return false
	}
	for _, n := range r.d.nodes {
		if n.state.Status == StatusWaiting {
			return true
		}
	}
	return false
}

// continued is the input of the run's next execution: this one's, with
// the DAG's state instead of the state it started with.
func (r *dagRun) continued() (PipelineInput, error) {
	d := r.d
	st := dagState{Started: d.started, Executions: d.executions + 1, Pending: d.pending,
		FirstFailed: r.firstFailed}
	if r.firstErr != nil {
		st.FirstError = ErrorMessage(r.firstErr)
	}
	for _, n := range d.nodes {
		if n.state.Status != StatusWaiting {
			st.Steps = append(st.Steps, n.state)
		}
	}
	in := d.in
	// The next execution reads the pipeline from the stored plan again.
	in.Pipeline = plan.Pipeline{}
	var err error
	in.State, err = gzipJSON(st)
	return in, err
}

// restore takes the state an earlier execution of the run carried.
func (r *dagRun) restore(state []byte) error {
	d := r.d
	var st dagState
	if err := gunzipJSON(state, &st); err != nil {
		return temporal.NewNonRetryableApplicationError(fmt.Sprintf("the run's continued state cannot be read: %v", err), "BadState", nil)
	}
	d.started, d.executions, d.pending = st.Started, st.Executions, st.Pending
	byPath := make(map[string]*node, len(d.nodes))
	for _, n := range d.nodes {
		byPath[n.step.Path] = n
	}
	for _, s := range st.Steps {
		n := byPath[s.Path]
		if n == nil {
			continue
		}
		n.state = s
		n.outputs = d.stepOutputs(n.step)
		for _, o := range s.Outputs {
			n.setOutput(o)
		}
	}
	if st.FirstFailed != "" {
		r.firstFailed = st.FirstFailed
		r.firstErr = temporal.NewApplicationError(st.FirstError, "")
	}
	return nil
}

// gzipJSON is v's JSON, gzipped: a state or record that repeats itself
// for each of thousands of steps shrinks tenfold or more. encoding/json
// and compress/gzip give the same bytes for the same value (json sorts
// map keys), which workflowcheck cannot see.
//
//workflowcheck:ignore
func gzipJSON(v any) ([]byte, error) {
	js, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return gzipBytes(js)
}

// gzipBytes is data gzipped, the same bytes for the same data.
//
//workflowcheck:ignore
func gzipBytes(data []byte) ([]byte, error) {
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	if _, err := zw.Write(data); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// gunzipJSON decodes what gzipJSON encoded.
//
//workflowcheck:ignore
func gunzipJSON(gz []byte, v any) error {
	js, err := gunzipBytes(gz)
	if err != nil {
		return err
	}
	return json.Unmarshal(js, v)
}

// gunzipBytes undoes gzipBytes.
//
//workflowcheck:ignore
func gunzipBytes(gz []byte) ([]byte, error) {
	zr, err := gzip.NewReader(bytes.NewReader(gz))
	if err != nil {
		return nil, err
	}
	return io.ReadAll(zr)
}
