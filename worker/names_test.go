package worker

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/workflow"

	"github.com/porch-pipelines/porch/activities"
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
// activities under, local activities included, and their signatures: the
// names are in every history, so a rename would break running and
// replayed workflows. It records what a worker running workflows and
// steps registers, and what one running workflows only does. Regenerate
// with go test ./worker -run TestRegisteredNames -update, only for a
// change that keeps old histories working.
func TestRegisteredNames(t *testing.T) {
	var r nameRecorder
	for _, withSteps := range []bool{true, false} {
		w := &Worker{acts: &activities.Activities{}, porchStatus: &statusAttribute{}}
		if withSteps {
			w.acts.Register(&r)
		}
		w.registerWorkflows(&r, nil, nil, withSteps)
	}
	sort.Strings(r.lines)
	got := strings.Join(slices.Compact(r.lines), "\n") + "\n"
	golden := filepath.Join("testdata", "registered.golden")
	if *update {
		require.NoError(t, os.WriteFile(golden, []byte(got), 0o644))
	}
	want, err := os.ReadFile(golden)
	require.NoError(t, err)
	assert.Equal(t, string(want), got, "registered names or signatures changed; old histories name the old ones")
}
