package worker_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"

	"github.com/porch-pipelines/porch/compiler/plan"
	"github.com/porch-pipelines/porch/workflows"
)

// TestRecordScheduledHistory records a run a Temporal Schedule started,
// whose input holds ${{name}} and ${{creation_context.trigger_time}}: the
// run fills them behind the scheduled-inputs version marker.
//
//	PORCH_RECORD_HISTORIES=1 go test ./worker -run TestRecordScheduledHistory
func TestRecordScheduledHistory(t *testing.T) {
	if os.Getenv("PORCH_RECORD_HISTORIES") == "" {
		t.Skip("set PORCH_RECORD_HISTORIES=1 to regenerate workflows/testdata/histories")
	}
	newHarness(t)
	ctx := context.Background()
	p := compile(t, writePipeline(t, "type: pipeline\nname: greet\ninputs:\n  greeting: hi\njobs:\n  say:\n"+
		"    command: echo ${{inputs.greeting}}\n    inputs:\n      greeting: ${{parent.inputs.greeting}}\n"), nil)
	p.Pipeline.Inputs[0].Value.Literal = "run " + plan.ScheduledRunName + " due " + plan.ScheduledTriggerTime
	r := workflows.NewStartRequest(p, "", nil)
	require.NoError(t, r.StorePlan(ctx, temporalClient, workflows.PlanHolder{Schedule: "scheduled-greet"}))
	h, err := temporalClient.ScheduleClient().Create(ctx, client.ScheduleOptions{
		ID:   "scheduled-greet",
		Spec: client.ScheduleSpec{CronExpressions: []string{"0 0 1 1 *"}},
		Action: &client.ScheduleWorkflowAction{ID: "scheduled-greet", Workflow: workflows.PipelineName, Args: []any{r.Input},
			TaskQueue: r.Options.TaskQueue, TypedSearchAttributes: r.Options.TypedSearchAttributes, Memo: r.Options.Memo},
		TriggerImmediately: true,
	})
	require.NoError(t, err)
	defer h.Delete(ctx)
	var id string
	require.Eventually(t, func() bool { // the schedule starts its first run
		desc, err := h.Describe(ctx)
		if err == nil && len(desc.Info.RecentActions) > 0 {
			id = desc.Info.RecentActions[0].StartWorkflowResult.WorkflowID
		}
		return id != ""
	}, time.Minute, 50*time.Millisecond)
	require.NoError(t, temporalClient.GetWorkflow(ctx, id, "").Get(ctx, nil))
	out := filepath.Join("..", "workflows", "testdata", "histories")
	recordRun(t, out, "v2-scheduled", id)
	require.Contains(t, payloadText(t, filepath.Join(out, "v2-scheduled-say.json")), "run "+id+" due ", "the step got the filled input")
	require.Contains(t, payloadText(t, filepath.Join(out, "v2-scheduled-pipeline.json")), "scheduled-inputs",
		"the run records the scheduled-inputs marker")
}

// payloadText is the decoded data of every payload in a history file.
func payloadText(t *testing.T, file string) string {
	b, err := os.ReadFile(file)
	require.NoError(t, err)
	var doc any
	require.NoError(t, json.Unmarshal(b, &doc))
	var sb strings.Builder
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			if d, ok := v["data"].(string); ok {
				if raw, err := base64.StdEncoding.DecodeString(d); err == nil {
					sb.Write(raw)
					sb.WriteByte('\n')
				}
			}
			for _, c := range v {
				walk(c)
			}
		case []any:
			for _, c := range v {
				walk(c)
			}
		}
	}
	walk(doc)
	return sb.String()
}
