package webui

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	enums "go.temporal.io/api/enums/v1"

	"github.com/porch-pipelines/porch/graph"
)

// TestStylesheetPaletteMatchesGraph checks that the page colours each
// status as Mermaid and DOT output do.
func TestStylesheetPaletteMatchesGraph(t *testing.T) {
	css, err := os.ReadFile("static/app.css")
	require.NoError(t, err)
	rule := regexp.MustCompile(`\.st-([a-z]+) +\{ --fill: (#[0-9a-f]{6}); --stroke: (#[0-9a-f]{6}); \}`)
	found := map[graph.Status]graph.Colors{}
	for _, m := range rule.FindAllStringSubmatch(string(css), -1) {
		found[graph.Status(m[1])] = graph.Colors{Fill: m[2], Stroke: m[3]}
	}
	assert.Equal(t, graph.Palette, found)
	for _, st := range graph.Statuses {
		assert.Contains(t, found, st)
	}
}

// TestFailedBatches reads a parallel step's report: a mini-batch whose
// last attempt failed is listed with its error, one that failed and then
// succeeded is not.
func TestFailedBatches(t *testing.T) {
	report := "mini_batch_id,attempt,result,node,process,start_time,elapsed_seconds,items,returned,error\n" +
		"0,1,succeeded,n1,p1,2026-01-01T00:00:00Z,0.1,1,1,\n" +
		"3,1,failed,n1,p1,2026-01-01T00:00:00Z,0.1,1,0,\"ValueError: bad, really\"\n" +
		"2,1,failed,n2,p2,2026-01-01T00:00:00Z,0.1,1,0,flaky\n" +
		"2,2,succeeded,n1,p1,2026-01-01T00:00:01Z,0.1,1,1,\n" +
		"3,2,failed,n2,p2,2026-01-01T00:00:01Z,0.1,1,0,ValueError: bad again\n" +
		"5,1,fail" // a row being written
	got := failedBatches(strings.NewReader(report))
	assert.Equal(t, []failedBatch{{Batch: 3, Attempt: 2, Node: "n2", Error: "ValueError: bad again"}}, got)
}

// TestReadLog reads a log's tail from a whole line, then what follows from
// an offset, never splitting a character.
func TestReadLog(t *testing.T) {
	var b strings.Builder
	for b.Len() < 3*logTail {
		b.WriteString("line of the log ✓\n")
	}
	log := b.String()
	v, err := readLog(strings.NewReader(log), -1)
	require.NoError(t, err)
	assert.True(t, v.Cut)
	assert.Equal(t, int64(len(log)), v.Offset)
	assert.True(t, strings.HasPrefix(v.Text, "line of the log"), "the tail starts at a line")
	assert.True(t, strings.HasSuffix(log, v.Text))
	assert.LessOrEqual(t, len(v.Text), logTail)

	short, err := readLog(strings.NewReader("one\ntwo\n"), -1)
	require.NoError(t, err)
	assert.Equal(t, logView{Text: "one\ntwo\n", Offset: 8}, short)

	// From offset 4 of "one\ntwo ✓", the reader holding the rest: a
	// character cut by the end of what was written is left for next time.
	part := "two \xe2\x9c"
	v, err = readLog(strings.NewReader(part), 4)
	require.NoError(t, err)
	assert.Equal(t, logView{Text: "two ", Offset: 8}, v)
}

func TestRunStatus(t *testing.T) {
	assert.Equal(t, "running", runStatus(enums.WORKFLOW_EXECUTION_STATUS_RUNNING, ""))
	assert.Equal(t, "early_terminated", runStatus(enums.WORKFLOW_EXECUTION_STATUS_CANCELED, "early_terminated"))
	assert.Equal(t, "succeeded", runStatus(enums.WORKFLOW_EXECUTION_STATUS_COMPLETED, ""))
	assert.Equal(t, "canceled", runStatus(enums.WORKFLOW_EXECUTION_STATUS_CANCELED, ""))
	assert.Equal(t, "terminated", runStatus(enums.WORKFLOW_EXECUTION_STATUS_TERMINATED, ""))
}

func TestWorkflowLink(t *testing.T) {
	s := &server{opts: Options{Namespace: "default", TemporalUI: "http://ui:8233/"}}
	assert.Equal(t, "http://ui:8233/namespaces/default/workflows/run-1%2Fsub%2Fstep", s.workflowLink("run-1/sub/step"))
	s.opts.TemporalUI = ""
	assert.Empty(t, s.workflowLink("run-1"))
}
