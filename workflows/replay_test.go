package workflows

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
)

// TestReplay replays every recorded history in testdata/histories against
// the current workflow code, so a change that breaks determinism fails CI.
// Files named bad-*.json are histories the code must refuse. Regenerate the
// fixtures with PORCH_RECORD_HISTORIES=1 go test ./worker -run TestRecordHistories.
func TestReplay(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "histories", "*.json"))
	require.NoError(t, err)
	require.NotEmpty(t, files, "no replay fixtures: record them (see the doc comment)")
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			r := worker.NewWorkflowReplayer()
			Register(r)
			err := replay(t, r, f)
			if strings.HasPrefix(filepath.Base(f), "bad-") {
				require.Error(t, err, "a history the code no longer matches must fail to replay")
				return
			}
			require.NoError(t, err)
		})
	}
}

// replay replays a recorded history under its own workflow id, as a worker
// would: the replayer's default id ("ReplayId") is no run's, and a run
// started from Temporal takes its workflow id as its run id.
func replay(t *testing.T, r worker.WorkflowReplayer, file string) error {
	b, err := os.Open(file)
	require.NoError(t, err)
	defer b.Close()
	h, err := client.HistoryFromJSON(b, client.HistoryJSONOptions{})
	require.NoError(t, err)
	id := h.GetEvents()[0].GetWorkflowExecutionStartedEventAttributes().GetWorkflowId()
	return r.ReplayWorkflowHistoryWithOptions(nil, h, worker.ReplayWorkflowHistoryOptions{
		OriginalExecution: workflow.Execution{ID: id},
	})
}

// typeNames records the workflow types Register registers.
type typeNames struct{ names []string }

func (r *typeNames) RegisterWorkflow(any) { r.names = append(r.names, "(unnamed)") }
func (r *typeNames) RegisterWorkflowWithOptions(_ any, o workflow.RegisterOptions) {
	r.names = append(r.names, o.Name)
}
func (r *typeNames) RegisterDynamicWorkflow(any, workflow.DynamicRegisterOptions) {
	r.names = append(r.names, "(dynamic)")
}

// TestReplayFixturesCoverEveryWorkflowType checks that every workflow type
// Register registers has a recorded history that TestReplay replays: a
// type without one could change without a replay test noticing.
func TestReplayFixturesCoverEveryWorkflowType(t *testing.T) {
	var registered typeNames
	Register(&registered)
	require.NotEmpty(t, registered.names)
	seen := map[string]bool{}
	files, err := filepath.Glob(filepath.Join("testdata", "histories", "v*.json"))
	require.NoError(t, err)
	for _, f := range files {
		b, err := os.Open(f)
		require.NoError(t, err)
		h, err := client.HistoryFromJSON(b, client.HistoryJSONOptions{})
		b.Close()
		require.NoError(t, err, f)
		seen[h.GetEvents()[0].GetWorkflowExecutionStartedEventAttributes().GetWorkflowType().GetName()] = true
	}
	for _, name := range registered.names {
		assert.True(t, seen[name], "no replay fixture in testdata/histories runs workflow type %q: record one (see TestReplay)", name)
	}
}

// TestActivitiesRunByName checks that every activity and local activity
// the workflows run is named by a registered name (a constant), never by
// a Go function value, whose name would be in every history and break it
// when the function is renamed.
func TestActivitiesRunByName(t *testing.T) {
	files, err := filepath.Glob("*.go")
	require.NoError(t, err)
	fset := token.NewFileSet()
	calls := 0
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, f, nil, 0)
		require.NoError(t, err)
		ast.Inspect(file, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok || len(call.Args) < 2 {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok || (sel.Sel.Name != "ExecuteActivity" && sel.Sel.Name != "ExecuteLocalActivity") {
				return true
			}
			calls++
			name := ""
			switch a := call.Args[1].(type) {
			case *ast.Ident:
				name = a.Name
			case *ast.SelectorExpr:
				name = a.Sel.Name
			}
			assert.True(t, strings.HasSuffix(name, "Name"), "%s: %s runs an activity by a Go value, not its registered name",
				fset.Position(call.Pos()), sel.Sel.Name)
			return true
		})
	}
	require.NotZero(t, calls, "no ExecuteActivity call found")
}
