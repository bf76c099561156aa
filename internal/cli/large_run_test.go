package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"

	"github.com/porch-pipelines/porch/graph"
	"github.com/porch-pipelines/porch/workflows"
)

// largeRunSteps, largeRunOutputs and largeRunCommand make a run whose steps
// and graph are each more than Temporal's 2 MB payload limit of JSON with
// few steps: long step and output names, many outputs, long commands. The
// steps run in largeRunChains chains, so that the DAG starts a few at a
// time: a workflow task starting all 200 at once (18 KB of input each)
// passes the server's 4 MB gRPC message limit, and the server terminates
// the run.
const (
	largeRunSteps   = 200
	largeRunChains  = 10
	largeRunOutputs = 20
	largeRunCommand = 6000
)

// largeRunYAML is a pipeline of largeRunChains chains of steps, each `true`
// with a long argument, with largeRunOutputs outputs of long names,
// reading the first output of the step before it.
func largeRunYAML() string {
	var b strings.Builder
	b.WriteString("type: pipeline\nname: large-reads\njobs:\n")
	arg := strings.Repeat("c", largeRunCommand)
	for i := range largeRunSteps {
		fmt.Fprintf(&b, "  %s:\n    command: true %s\n    outputs:\n", largeStepName(i), arg)
		for o := range largeRunOutputs {
			fmt.Fprintf(&b, "      %s:\n", largeOutputName(o))
		}
		if i >= largeRunChains {
			fmt.Fprintf(&b, "    inputs:\n      x: ${{parent.jobs.%s.outputs.%s}}\n", largeStepName(i-largeRunChains), largeOutputName(0))
		}
	}
	return b.String()
}

func largeOutputName(o int) string { return fmt.Sprintf("o%02d_%s", o, strings.Repeat("o", 180)) }

func largeStepName(i int) string { return fmt.Sprintf("s%03d_%s", i, strings.Repeat("x", 180)) }

// TestReadersReadARunLargerThanAQueryAnswers runs a pipeline whose steps
// and graph each pass Temporal's 2 MB payload limit on porch dev, and reads
// it whole: porch job show (watching, then once), porch job graph and the
// page's API. The steps query pages; asked with no argument (the Temporal
// CLI, the UI's Queries tab) it answers the first steps within its budget.
func TestReadersReadARunLargerThanAQueryAnswers(t *testing.T) {
	dir := t.TempDir()
	t.Setenv(envHome, filepath.Join(dir, "home"))
	t.Setenv(envAddress, "")
	addr, devUI := startDevForPage(t, dir)
	file := filepath.Join(dir, "large.yml")
	require.NoError(t, os.WriteFile(file, []byte(largeRunYAML()), 0o644))
	run := submit(t, addr, file)

	var out, errOut syncBuffer
	require.Equal(t, ExitOK, Run(context.Background(), []string{"job", "show", "--watch", "--address", addr, run}, nil, &out, &errOut),
		"%s%s", &out, &errOut)
	for i := range largeRunSteps {
		require.Contains(t, out.String(), largeStepName(i), "job show --watch prints every step")
	}

	c, err := client.Dial(client.Options{HostPort: addr})
	require.NoError(t, err)
	defer c.Close()
	ctx := context.Background()
	steps, err := workflows.QuerySteps(ctx, c, run, time.Minute)
	require.NoError(t, err)
	require.Len(t, steps, largeRunSteps)
	all, err := json.Marshal(steps)
	require.NoError(t, err)
	require.Greater(t, len(all), 2<<20, "the steps are more than one payload holds")
	for i, s := range steps {
		require.Equal(t, largeStepName(i), s.Path)
		require.Equal(t, workflows.StatusSucceeded, s.Status)
		require.Equal(t, largeRunOutputs+1, len(s.Outputs), "its outputs and artifacts")
	}
	g, err := workflows.RunGraph(ctx, c, run)
	require.NoError(t, err)
	require.Equal(t, largeRunSteps, g.Len())
	gjs, err := json.Marshal(g)
	require.NoError(t, err)
	require.Greater(t, len(gjs), 2<<20, "the graph is more than one payload holds")

	// With no argument the query answers a list of the first steps, and
	// no more than its budget.
	v, err := c.QueryWorkflow(ctx, run, "", workflows.StepsQuery)
	require.NoError(t, err)
	var raw json.RawMessage
	require.NoError(t, v.Get(&raw))
	assert.LessOrEqual(t, len(raw), 448<<10)
	var first []workflows.StepState
	require.NoError(t, json.Unmarshal(raw, &first))
	require.NotEmpty(t, first)
	require.Less(t, len(first), largeRunSteps)
	assert.Equal(t, steps[:len(first)], first)
	t.Logf("steps: %d bytes of JSON, %d steps in the first answer (%d bytes); graph: %d bytes", len(all), len(first), len(raw), len(gjs))
	// A gzipped page holds more steps, within the same budget.
	v, err = c.QueryWorkflow(ctx, run, "", workflows.StepsQuery, workflows.StepsPage{Gzip: true})
	require.NoError(t, err)
	require.NoError(t, v.Get(&raw))
	assert.LessOrEqual(t, len(raw), 448<<10)
	var zipped workflows.StepsPageAnswer
	require.NoError(t, json.Unmarshal(raw, &zipped))
	assert.Greater(t, zipped.Next, len(first))
	t.Logf("a gzipped page: %d steps in %d bytes", zipped.Next, len(raw))
	// The graph query says where to read a graph it cannot answer.
	_, err = c.QueryWorkflow(ctx, run, "", workflows.GraphQuery)
	require.ErrorContains(t, err, "porch job graph and porch's page build it from the run's plan")

	var show, drawn syncBuffer
	require.Equal(t, ExitOK, Run(ctx, []string{"job", "show", "--address", addr, run}, nil, &show, &errOut), "%s", &errOut)
	for i := range largeRunSteps {
		require.Contains(t, show.String(), largeStepName(i), "job show prints every step")
	}
	require.Equal(t, ExitOK, Run(ctx, []string{"job", "graph", "--address", addr, run}, nil, &drawn, &errOut), "%s", &errOut)
	for i := range largeRunSteps {
		require.Contains(t, drawn.String(), largeStepName(i), "job graph draws every step")
	}

	var view struct {
		Graph graph.Graph
		Steps []struct{ Path, Status string }
	}
	getJSON(t, devUI+"/porch/api/runs/"+run, &view)
	require.Equal(t, largeRunSteps, view.Graph.Len())
	require.Len(t, view.Steps, largeRunSteps)
	for i, s := range view.Steps {
		require.Equal(t, largeStepName(i), s.Path)
		require.Equal(t, "succeeded", s.Status)
	}
}
