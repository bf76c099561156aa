package workflows

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	enums "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"

	"github.com/porch-pipelines/porch/compiler/plan"
)

// ErrRunning is returned when resuming a run that has not ended.
var ErrRunning = errors.New("the run is still running")

// Resume starts a run that failed or was canceled again, under the same run
// id, with the same plan and inputs. Command and parallel steps that
// succeeded are not run again; a parallel step runs only the mini-batches
// that did not succeed.
func Resume(ctx context.Context, c client.Client, runID string) (client.WorkflowRun, []string, error) {
	desc, err := c.DescribeWorkflowExecution(ctx, runID, "")
	if err != nil {
		return nil, nil, err
	}
	info := desc.GetWorkflowExecutionInfo()
	switch info.GetStatus() {
	case enums.WORKFLOW_EXECUTION_STATUS_RUNNING:
		return nil, nil, ErrRunning
	case enums.WORKFLOW_EXECUTION_STATUS_COMPLETED:
		return nil, nil, fmt.Errorf("run %s succeeded: there is nothing to resume", runID)
	}
	if info.GetType().GetName() != PipelineName {
		return nil, nil, fmt.Errorf("%s is a %s workflow, not a porch run", runID, info.GetType().GetName())
	}
	in, err := startInput(ctx, c, runID, info.GetExecution().GetRunId())
	if err != nil {
		return nil, nil, err
	}
	// The new execution reads the plan the first stored: the run holds
	// it again, and a store that ended starts again.
	if in.Plan != nil {
		if _, err := ReadPlan(ctx, c, *in.Plan, PlanHolder{Run: runID}, true); err != nil {
			return nil, nil, fmt.Errorf("run %s: %w", runID, err)
		}
	}
	reused, err := succeededSteps(ctx, c, runID, info.GetExecution().GetRunId(), runID+"/")
	if err != nil {
		return nil, nil, err
	}
	sort.Strings(reused)
	in.Reused = reused
	// A resumed run starts from its plan, not from where its last
	// execution continued.
	in.State = nil
	// A run started from porch compile -o start-input has no run id in
	// its input: it took its workflow id.
	if in.RunID == "" {
		in.RunID = runID
	}
	// A run a schedule started filled its inputs as it started; the new
	// execution, which no schedule starts, gets them filled.
	if fired, ok := scheduledAt(info.GetSearchAttributes()); ok {
		in.Inputs = plan.FillScheduled(in.Inputs, runID, fired)
	}
	memo := map[string]any{}
	for k, v := range info.GetMemo().GetFields() {
		var s string
		if converter.GetDefaultDataConverter().FromPayload(v, &s) == nil {
			memo[k] = s
		}
	}
	opts := client.StartWorkflowOptions{
		ID:                    runID,
		TaskQueue:             info.GetTaskQueue(),
		TypedSearchAttributes: runAttributes(runKeys{runID, in.Name, in.Experiment, in.Settings.SubmittedBy}),
		Memo:                  memo,
		WorkflowIDReusePolicy: enums.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE_FAILED_ONLY,
	}
	// The run keeps its labels; the details say what the resumption reuses.
	md := desc.GetExecutionConfig().GetUserMetadata()
	dc := converter.GetDefaultDataConverter()
	_ = dc.FromPayload(md.GetSummary(), &opts.StaticSummary)
	if dc.FromPayload(md.GetDetails(), &opts.StaticDetails) == nil && opts.StaticDetails != "" {
		opts.StaticDetails = cut(opts.StaticDetails+resumedDetails(reused), maxDetails)
	}
	run, err := c.ExecuteWorkflow(ctx, opts, PipelineName, in)
	return run, reused, err
}

// resumedDetails is what a resumed run's details add to the first
// execution's.
func resumedDetails(reused []string) string {
	if len(reused) == 0 {
		return "\n**Resumed**: every step runs again\n"
	}
	return fmt.Sprintf("\n**Resumed**, reusing %s: `%s`\n", plural(int64(len(reused)), "step", "steps"), strings.Join(reused, "`, `"))
}

// startInput reads the input an execution started with.
func startInput(ctx context.Context, c client.Client, id, runID string) (PipelineInput, error) {
	var in PipelineInput
	it := c.GetWorkflowHistory(ctx, id, runID, false, enums.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	if !it.HasNext() {
		return in, fmt.Errorf("run %s has no history", id)
	}
	ev, err := it.Next()
	if err != nil {
		return in, err
	}
	attrs := ev.GetWorkflowExecutionStartedEventAttributes()
	if attrs == nil || len(attrs.GetInput().GetPayloads()) == 0 {
		return in, fmt.Errorf("run %s: its history does not start with its input", id)
	}
	if err := converter.GetDefaultDataConverter().FromPayload(attrs.GetInput().GetPayloads()[0], &in); err != nil {
		return in, fmt.Errorf("run %s: read its input: %w", id, err)
	}
	return in, nil
}

// succeededSteps lists the command and parallel steps of a pipeline
// execution that succeeded, descending into nested pipelines that did not.
// Step paths are child workflow ids without the run's prefix.
func succeededSteps(ctx context.Context, c client.Client, id, runID, prefix string) ([]string, error) {
	type child struct {
		kind, runID string
		done        bool
	}
	children := map[string]*child{}
	var order, out []string
	it := c.GetWorkflowHistory(ctx, id, runID, false, enums.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			return nil, err
		}
		switch {
		case ev.GetWorkflowExecutionStartedEventAttributes() != nil:
			// An execution that continued an earlier one carries the
			// steps that ended before it.
			carried, err := carriedSteps(ctx, c, ev, prefix)
			if err != nil {
				return nil, err
			}
			out = append(out, carried...)
		case ev.GetChildWorkflowExecutionStartedEventAttributes() != nil:
			a := ev.GetChildWorkflowExecutionStartedEventAttributes()
			wid := a.GetWorkflowExecution().GetWorkflowId()
			children[wid] = &child{kind: a.GetWorkflowType().GetName(), runID: a.GetWorkflowExecution().GetRunId()}
			order = append(order, wid)
		case ev.GetChildWorkflowExecutionCompletedEventAttributes() != nil:
			if ch := children[completedID(ev)]; ch != nil {
				ch.done = true
			}
		}
	}
	for _, wid := range order {
		ch := children[wid]
		switch {
		case ch.kind == PipelineName:
			// Nested pipelines always run again; their finished steps
			// are reused inside them.
			sub, err := succeededSteps(ctx, c, wid, ch.runID, prefix)
			if err != nil {
				return nil, err
			}
			out = append(out, sub...)
		case ch.done:
			out = append(out, strings.TrimPrefix(wid, prefix))
		}
	}
	return out, nil
}

// carriedSteps lists the command and parallel steps that succeeded in the
// earlier executions of a pipeline execution that continued them (its
// started event), descending into nested pipelines.
func carriedSteps(ctx context.Context, c client.Client, ev *historypb.HistoryEvent, prefix string) ([]string, error) {
	var in PipelineInput
	payloads := ev.GetWorkflowExecutionStartedEventAttributes().GetInput().GetPayloads()
	if len(payloads) == 0 || converter.GetDefaultDataConverter().FromPayload(payloads[0], &in) != nil || len(in.State) == 0 {
		return nil, nil
	}
	var st dagState
	if err := gunzipJSON(in.State, &st); err != nil {
		return nil, fmt.Errorf("read the state of %s: %w", ev.GetWorkflowExecutionStartedEventAttributes().GetOriginalExecutionRunId(), err)
	}
	var out []string
	for _, s := range st.Steps {
		switch {
		case s.Type == plan.StepPipeline && s.WorkflowID != "":
			sub, err := succeededSteps(ctx, c, s.WorkflowID, "", prefix)
			if err != nil {
				return nil, err
			}
			out = append(out, sub...)
		case runsOnCompute(s.Type) && s.Status == StatusSucceeded:
			out = append(out, s.Path)
		}
	}
	return out, nil
}

func completedID(ev *historypb.HistoryEvent) string {
	return ev.GetChildWorkflowExecutionCompletedEventAttributes().GetWorkflowExecution().GetWorkflowId()
}

// RunSettings reads the settings a run was submitted with (its default
// datastore, ...) from the start of its history: the CLI needs them to find
// the folders of steps that failed before reporting their outputs.
func RunSettings(ctx context.Context, c client.Client, runID string) (plan.Settings, error) {
	in, err := startInput(ctx, c, runID, "")
	return in.Settings, err
}

// scheduledAt is when the schedule that started a run fired, read from
// the run's search attributes; false for a run no schedule started.
func scheduledAt(sa *commonpb.SearchAttributes) (time.Time, bool) {
	fields := sa.GetIndexedFields()
	if _, ok := fields[AttrScheduledBy]; !ok {
		return time.Time{}, false
	}
	var t time.Time
	p, ok := fields[AttrScheduledStart]
	return t, ok && converter.GetDefaultDataConverter().FromPayload(p, &t) == nil && !t.IsZero()
}
