package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/porch-pipelines/porch/compiler/plan"
	"github.com/porch-pipelines/porch/internal/devserver"
	"github.com/porch-pipelines/porch/worker"
	"github.com/porch-pipelines/porch/workflows"
)

// TestStartInputStartedFromTemporal is the README's recipe with the SDK's
// client in place of temporal workflow start: compile a sample to its start
// input, start that file's JSON as a Pipeline workflow with a plain client
// (no search attributes, no memo), and find the run, its steps, outputs and
// logs with porch job list, show and logs.
func TestStartInputStartedFromTemporal(t *testing.T) {
	ctx := context.Background()
	srv, err := devserver.Start(ctx, devserver.Options{SearchAttributes: workflows.SearchAttributes()})
	require.NoError(t, err)
	defer srv.Stop()
	c, err := client.DialContext(ctx, client.Options{HostPort: srv.FrontendAddress()})
	require.NoError(t, err)
	defer c.Close()
	dir := t.TempDir()
	home := filepath.Join(dir, "home")
	// A worker as porch dev starts: the default compute's serverless
	// instance types are what the start input's steps, compiled against
	// this server's catalogue, run on.
	w, err := worker.Start(c, worker.Options{Home: home, Computes: []string{""}, Workflows: true})
	require.NoError(t, err)
	defer w.Stop()
	t.Setenv(envHome, home)
	t.Setenv(envAddress, srv.FrontendAddress())
	t.Setenv(envUser, "alice@example.com")

	var stdout, stderr bytes.Buffer
	code := Run(ctx, []string{"compile", "-o", "start-input", filepath.Join("..", "..", "samples", "hello", "pipeline.yml")},
		nil, &stdout, &stderr)
	require.Equal(t, ExitOK, code, stderr.String())
	file := filepath.Join(dir, "hello.json")
	require.NoError(t, os.WriteFile(file, stdout.Bytes(), 0o644))

	input, err := os.ReadFile(file)
	require.NoError(t, err)
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "hello-from-temporal", TaskQueue: plan.DefaultTaskQueue},
		workflows.PipelineName, json.RawMessage(input))
	require.NoError(t, err)
	var res workflows.PipelineResult
	require.NoError(t, run.Get(ctx, &res))
	shout := "azureml://datastores/workspaceblobstore/paths/azureml/hello-from-temporal/b/shout/"
	assert.Contains(t, res.Outputs, workflows.OutputLocation{Name: "shout", URI: shout}, "outputs are under the workflow id")
	b, err := os.ReadFile(filepath.Join(home, "datastores", "workspaceblobstore", "azureml", "hello-from-temporal", "b", "shout", "shout.txt"))
	require.NoError(t, err)
	assert.Equal(t, "HELLO FROM PORCH\n", string(b))

	// Also started by a plain client, with some of porch's attributes
	// set already: upserting them again changes nothing.
	partial, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID: "hello-partial", TaskQueue: plan.DefaultTaskQueue,
		TypedSearchAttributes: temporal.NewSearchAttributes(
			temporal.NewSearchAttributeKeyKeyword(workflows.AttrRun).ValueSet("hello-partial"),
			temporal.NewSearchAttributeKeyKeyword(workflows.AttrPipeline).ValueSet("hello")),
	}, workflows.PipelineName, json.RawMessage(input))
	require.NoError(t, err)
	require.NoError(t, partial.Get(ctx, nil))

	// Waits for visibility to index the runs' upserted attributes.
	listed := regexp.MustCompile(`(?m)^hello-from-temporal +completed +.* hello +alice@example\.com$`)
	listedPartial := regexp.MustCompile(`(?m)^hello-partial +completed +.* hello +alice@example\.com$`)
	require.Eventually(t, func() bool {
		stdout.Reset()
		stderr.Reset()
		return Run(ctx, []string{"job", "list"}, nil, &stdout, &stderr) == ExitOK &&
			listed.MatchString(stdout.String()) && listedPartial.MatchString(stdout.String())
	}, 30*time.Second, 100*time.Millisecond, "porch job list:\n%s%s", &stdout, &stderr)
	assert.NotContains(t, stdout.String(), "hello-from-temporal/", "steps are not runs")

	stdout.Reset()
	code = Run(ctx, []string{"job", "show", "hello-from-temporal"}, nil, &stdout, &stderr)
	require.Equal(t, ExitOK, code, stderr.String())
	out := stdout.String()
	assert.Regexp(t, `(?m)^run hello-from-temporal: completed `, out)
	assert.Regexp(t, `(?m)^submitted by alice@example\.com$`, out)
	for _, step := range []string{"a", "b", "c"} {
		assert.Regexp(t, `(?m)^`+step+` +succeeded `, out)
	}
	assert.Contains(t, out, shout)

	stdout.Reset()
	code = Run(ctx, []string{"job", "logs", "hello-from-temporal", "b"}, nil, &stdout, &stderr)
	require.Equal(t, ExitOK, code, stderr.String())
	assert.Regexp(t, `(?m)^b wrote: HELLO FROM PORCH$`, stdout.String())
}
