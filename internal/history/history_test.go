package history

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	commonpb "go.temporal.io/api/common/v1"
	enums "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/api/serviceerror"
	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"google.golang.org/protobuf/types/known/timestamppb"
)

func TestFileNames(t *testing.T) {
	for _, c := range []struct {
		id   string
		n    int
		file string
	}{
		{"hello-k2x8q1za", 1, "hello-k2x8q1za.json"},
		{"hello-k2x8q1za/b", 1, "hello-k2x8q1za/b.json"},
		{"train-x/tune/trial-3", 1, "train-x/tune/trial-3.json"},
		{"hello-x/score", 2, "hello-x/score@2.json"},
		{"porch-quota/size/Standard_D4s_v3", 1, "porch-quota/size/Standard_D4s_v3.json"},
		{"a b:c@d%e", 1, "a%20b%3Ac%40d%25e.json"},
		{"../../etc/passwd", 1, "%2E./%2E./etc/passwd.json"},
		{".hidden/x", 3, "%2Ehidden/x@3.json"},
		{"a//b", 1, "a%2F%2Fb.json"},
		{"/abs", 1, "%2Fabs.json"},
		{"x@2", 1, "x%402.json"},
	} {
		assert.Equal(t, c.file, FileName(c.id, c.n), c.id)
		id, n, ok := ParseFileName(c.file)
		assert.True(t, ok, c.file)
		assert.Equal(t, c.id, id, c.file)
		assert.Equal(t, c.n, n, c.file)
	}
	for _, name := range []string{"", ".json", "a.txt", "a@1.json", "a%zz.json", "a b.json", "a%2.json"} {
		_, _, ok := ParseFileName(name)
		assert.False(t, ok, name)
	}
}

// fixture reads a recorded history.
func fixture(t *testing.T, name string) *historypb.History {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "workflows", "testdata", "histories", name))
	require.NoError(t, err)
	h, err := unmarshal(data)
	require.NoError(t, err)
	return h
}

func TestDocumentRoundTrip(t *testing.T) {
	root := Execution{WorkflowID: "hello-z7clquk9", RunID: "r1", WorkflowType: "Pipeline", History: fixture(t, "v1-hello-pipeline.json")}
	step := Execution{WorkflowID: "hello-z7clquk9/b", RunID: "r2", WorkflowType: "CommandStep", History: fixture(t, "v1-hello-b.json")}
	again := Execution{WorkflowID: "hello-z7clquk9/b", RunID: "r3", WorkflowType: "CommandStep", History: fixture(t, "v1-hello-b.json")}
	var buf bytes.Buffer
	w := NewDocumentWriter(&buf, "hello-z7clquk9")
	for _, e := range []Execution{root, step, again} {
		require.NoError(t, w.Add(e))
	}
	require.NoError(t, w.Close())
	require.True(t, json.Valid(buf.Bytes()), buf.String())

	file := filepath.Join(t.TempDir(), "h.json")
	require.NoError(t, os.WriteFile(file, buf.Bytes(), 0o644))
	got, err := ReadFile(context.Background(), file, "h.json")
	require.NoError(t, err)
	require.Len(t, got, 3)
	assert.Equal(t, []string{"hello-z7clquk9", "hello-z7clquk9/b", "hello-z7clquk9/b@2"}, []string{got[0].Name, got[1].Name, got[2].Name})
	assert.Equal(t, "r2", got[1].RunID)
	assert.Equal(t, "CommandStep", got[1].WorkflowType)
	assert.Len(t, got[0].History.Events, len(root.History.Events))
	assert.Equal(t, root.History.Events[4].GetStartChildWorkflowExecutionInitiatedEventAttributes().GetWorkflowId(),
		got[0].History.Events[4].GetStartChildWorkflowExecutionInitiatedEventAttributes().GetWorkflowId())
}

func TestEmptyDocumentIsValidJSON(t *testing.T) {
	var buf bytes.Buffer
	w := NewDocumentWriter(&buf, "r")
	require.NoError(t, w.Close())
	assert.JSONEq(t, `{"run": "r", "workflows": []}`, buf.String())
}

func TestWriteFileIsWhatTheSDKReads(t *testing.T) {
	dir := t.TempDir()
	e := Execution{WorkflowID: "hello-z7clquk9/b", WorkflowType: "CommandStep", History: fixture(t, "v1-hello-b.json")}
	path, err := WriteFile(dir, e, 2)
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(dir, "hello-z7clquk9", "b@2.json"), path)
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	h, err := client.HistoryFromJSON(f, client.HistoryJSONOptions{})
	require.NoError(t, err)
	assert.Len(t, h.Events, len(e.History.Events))

	files, err := Files(dir)
	require.NoError(t, err)
	assert.Equal(t, []string{path}, files, "no temporary file is left")
	got, err := ReadFile(context.Background(), path, "hello-z7clquk9/b@2.json")
	require.NoError(t, err)
	require.Len(t, got, 1)
	assert.Equal(t, "hello-z7clquk9/b@2", got[0].Name)
	assert.Equal(t, "CommandStep", got[0].WorkflowType)
	assert.Empty(t, got[0].WorkflowID, "a history file does not say its workflow id")
}

func TestReadFileRefusesWhatIsNoHistory(t *testing.T) {
	dir := t.TempDir()
	for name, content := range map[string]string{
		"yaml.json":    "jobs: {}\n",
		"array.json":   "[1, 2]",
		"other.json":   `{"name": "x"}`,
		"empty.json":   "",
		"bad.json":     `{"events": [{"eventId": "x"}]}`,
		"nohist.json":  `{"run": "r", "workflows": [{"workflow_id": "r"}]}`,
		"noid.json":    `{"run": "r", "workflows": [{"history": {"events": []}}]}`,
		"nowork.json":  `{"run": "r", "workflows": []}`,
		"badhist.json": `{"run": "r", "workflows": [{"workflow_id": "r/a", "history": {"events": 3}}]}`,
	} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644))
	}
	for name, want := range map[string]string{
		"yaml.json":    `yaml.json is not a Temporal history: it is not JSON (byte 1: invalid character 'j' looking for beginning of value): expected what ` + "`porch job history` or `temporal workflow show --output json`" + ` writes`,
		"array.json":   `array.json is not a Temporal history: it holds a JSON array, not an object: expected what`,
		"other.json":   `other.json is not a Temporal history: it has neither "events" nor "workflows": expected what`,
		"empty.json":   `empty.json is not a Temporal history: it is not JSON (byte 0: unexpected end of JSON input)`,
		"bad.json":     `bad.json is not a Temporal history: `,
		"nohist.json":  `nohist.json: workflow r has no history`,
		"noid.json":    `noid.json: workflow 1 of the document has no workflow_id`,
		"nowork.json":  `nowork.json holds no workflows`,
		"badhist.json": `badhist.json: the history of workflow r/a is not a Temporal history: `,
	} {
		_, err := ReadFile(context.Background(), filepath.Join(dir, name), name)
		require.Error(t, err, name)
		assert.Contains(t, err.Error(), filepath.Join(dir, want[:len(name)])+want[len(name):], name)
	}
	_, err := ReadFile(context.Background(), "/dev/zero", "zero")
	require.ErrorContains(t, err, "/dev/zero is a device, not a regular file")
}

func TestFiles(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"b.json", "a/c.json", "a/notes.txt", ".hidden/x.json", "a/.porch-tmp-1"} {
		p := filepath.Join(dir, name)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, nil, 0o644))
	}
	files, err := Files(dir)
	require.NoError(t, err)
	assert.Equal(t, []string{filepath.Join(dir, "a", "c.json"), filepath.Join(dir, "b.json")}, files)

	_, err = Files(filepath.Join(dir, ".hidden", "none"))
	assert.Error(t, err)
	_, err = Files(filepath.Join(dir, "a", "notes.txt"))
	assert.NoError(t, err, "a file named itself is read, whatever its name")
	empty := t.TempDir()
	_, err = Files(empty)
	assert.EqualError(t, err, empty+" holds no .json history files")
}

// fakeServer serves histories, and a visibility index that knows only some
// of the executions (as one that has not indexed the others yet).
type fakeServer struct {
	histories map[[2]string][]*historypb.HistoryEvent
	latest    map[string]string
	listed    [][2]string
	query     string
}

func (f *fakeServer) DescribeWorkflowExecution(_ context.Context, id, _ string) (*workflowservice.DescribeWorkflowExecutionResponse, error) {
	run, ok := f.latest[id]
	if !ok {
		return nil, serviceerror.NewNotFound("no such workflow")
	}
	return &workflowservice.DescribeWorkflowExecutionResponse{WorkflowExecutionInfo: &workflowpb.WorkflowExecutionInfo{
		Execution: &commonpb.WorkflowExecution{WorkflowId: id, RunId: run}}}, nil
}

func (f *fakeServer) ListWorkflow(_ context.Context, req *workflowservice.ListWorkflowExecutionsRequest) (*workflowservice.ListWorkflowExecutionsResponse, error) {
	f.query = req.Query
	resp := &workflowservice.ListWorkflowExecutionsResponse{}
	for _, e := range f.listed {
		resp.Executions = append(resp.Executions, &workflowpb.WorkflowExecutionInfo{
			Execution: &commonpb.WorkflowExecution{WorkflowId: e[0], RunId: e[1]}})
	}
	return resp, nil
}

func (f *fakeServer) GetWorkflowHistory(_ context.Context, id, run string, _ bool, _ enums.HistoryEventFilterType) client.HistoryEventIterator {
	events, ok := f.histories[[2]string{id, run}]
	return &fakeIterator{events: events, missing: !ok}
}

type fakeIterator struct {
	events  []*historypb.HistoryEvent
	missing bool
}

func (it *fakeIterator) HasNext() bool { return it.missing || len(it.events) > 0 }

func (it *fakeIterator) Next() (*historypb.HistoryEvent, error) {
	if it.missing {
		return nil, serviceerror.NewNotFound("history is gone")
	}
	e := it.events[0]
	it.events = it.events[1:]
	return e, nil
}

func started(typ string, sec int64, continued string) *historypb.HistoryEvent {
	return &historypb.HistoryEvent{EventId: 1, EventType: enums.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED, EventTime: timestamppb.New(time.Unix(sec, 0)),
		Attributes: &historypb.HistoryEvent_WorkflowExecutionStartedEventAttributes{WorkflowExecutionStartedEventAttributes: &historypb.WorkflowExecutionStartedEventAttributes{
			WorkflowType: &commonpb.WorkflowType{Name: typ}, ContinuedExecutionRunId: continued}}}
}

func childStarted(id, run, typ string) *historypb.HistoryEvent {
	return &historypb.HistoryEvent{EventType: enums.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_STARTED,
		Attributes: &historypb.HistoryEvent_ChildWorkflowExecutionStartedEventAttributes{ChildWorkflowExecutionStartedEventAttributes: &historypb.ChildWorkflowExecutionStartedEventAttributes{
			WorkflowExecution: &commonpb.WorkflowExecution{WorkflowId: id, RunId: run}, WorkflowType: &commonpb.WorkflowType{Name: typ}}}}
}

func continuedAsNew(run string) *historypb.HistoryEvent {
	return &historypb.HistoryEvent{EventType: enums.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW,
		Attributes: &historypb.HistoryEvent_WorkflowExecutionContinuedAsNewEventAttributes{WorkflowExecutionContinuedAsNewEventAttributes: &historypb.WorkflowExecutionContinuedAsNewEventAttributes{
			NewExecutionRunId: run}}}
}

func TestFindFollowsChildrenAndContinueAsNew(t *testing.T) {
	f := &fakeServer{
		latest: map[string]string{"r": "r1"},
		histories: map[[2]string][]*historypb.HistoryEvent{
			{"r", "r1"}:     {started("Pipeline", 10, ""), childStarted("r/p", "p1", "Pipeline"), childStarted("r/a", "a1", "CommandStep")},
			{"r/a", "a1"}:   {started("ParallelStep", 11, ""), continuedAsNew("a2")},
			{"r/a", "a2"}:   {started("ParallelStep", 12, "a1"), continuedAsNew("a3")},
			{"r/a", "a3"}:   {started("ParallelStep", 13, "a2")},
			{"r/p", "p1"}:   {started("Pipeline", 11, ""), childStarted("r/p/x", "x1", "CommandStep")},
			{"r/p/x", "x1"}: {started("CommandStep", 12, "")},
		},
		// Visibility has indexed a later run only, and one whose history
		// is gone.
		listed: [][2]string{{"r", "r1"}, {"r/a", "a2"}, {"r/gone", "g1"}},
	}
	refs, err := Find(context.Background(), f, "default", "r", "PorchRun = 'r'")
	require.NoError(t, err)
	assert.Equal(t, "PorchRun = 'r'", f.query)
	var got []string
	for _, r := range refs {
		got = append(got, r.WorkflowID+" "+r.RunID+" "+r.WorkflowType)
	}
	assert.Equal(t, []string{"r r1 Pipeline", "r/a a1 ParallelStep", "r/a a2 ParallelStep", "r/a a3 ParallelStep",
		"r/p p1 Pipeline", "r/p/x x1 CommandStep"}, got)

	_, err = Find(context.Background(), f, "default", "nope", "")
	var nf *serviceerror.NotFound
	assert.ErrorAs(t, err, &nf)
}
