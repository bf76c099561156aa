package worker

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/workflow"

	"github.com/porch-pipelines/porch/activities"
	"github.com/porch-pipelines/porch/workflows"
)

var update = flag.Bool("update", false, "rewrite testdata/registered.golden")

// nameRecorder records what a worker registers: each name with the Go type
// of the function behind it.
type nameRecorder struct{ lines []string }

func (r *nameRecorder) add(kind, name string, fn any) {
	r.lines = append(r.lines, fmt.Sprintf("%s %s %s", kind, name, reflect.TypeOf(fn)))
}

func (r *nameRecorder) RegisterWorkflow(w any) { r.add("workflow", "(unnamed)", w) }
func (r *nameRecorder) RegisterWorkflowWithOptions(w any, o workflow.RegisterOptions) {
	r.add("workflow", o.Name, w)
}
func (r *nameRecorder) RegisterDynamicWorkflow(w any, _ workflow.DynamicRegisterOptions) {
	r.add("workflow", "(dynamic)", w)
}
func (r *nameRecorder) RegisterActivity(a any) { r.add("activity", "(unnamed)", a) }
func (r *nameRecorder) RegisterActivityWithOptions(a any, o activity.RegisterOptions) {
	r.add("activity", o.Name, a)
}
func (r *nameRecorder) RegisterDynamicActivity(a any, _ activity.DynamicRegisterOptions) {
	r.add("activity", "(dynamic)", a)
}

// TestRegisteredNames pins the names porch registers its workflows and
// activities under, and their signatures: the names are in every history,
// so a rename would break running and replayed workflows. Regenerate with
// go test ./worker -run TestRegisteredNames -update, only for a change that
// keeps old histories working.
func TestRegisteredNames(t *testing.T) {
	var r nameRecorder
	workflows.Register(&r)
	(&activities.Activities{}).Register(&r)
	sort.Strings(r.lines)
	got := strings.Join(r.lines, "\n") + "\n"
	golden := filepath.Join("testdata", "registered.golden")
	if *update {
		require.NoError(t, os.WriteFile(golden, []byte(got), 0o644))
	}
	want, err := os.ReadFile(golden)
	require.NoError(t, err)
	assert.Equal(t, string(want), got, "registered names or signatures changed; old histories name the old ones")
}
