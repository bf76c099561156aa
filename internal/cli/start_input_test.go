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

// TestStartInputStartedFromTemporal is docs/temporal.md's recipe with the SDK's
// client in place of temporal workflow start: compile a sample to its start
// input, start that file's JSON as a Pipeline workflow with a plain client
// (no search attributes, no memo), and find the run, its steps, outputs and
// logs with porch job list, show and logs.
func TestStartInputStartedFromTemporal(t *testing.T) {
	ctx := context.Background()
	c, home := startInputServer(t)
	input := startInput(t, filepath.Join("..", "..", "samples", "hello", "pipeline.yml"))
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "hello-from-temporal", TaskQueue: plan.DefaultTaskQueue},
		workflows.PipelineName, input)
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
	}, workflows.PipelineName, input)
	require.NoError(t, err)
	require.NoError(t, partial.Get(ctx, nil))

	// Waits for visibility to index the runs' upserted attributes.
	var stdout, stderr bytes.Buffer
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
	code := Run(ctx, []string{"job", "show", "hello-from-temporal"}, nil, &stdout, &stderr)
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

// TestStartInputRunResumes resumes a failed run started from its start
// input: porch job resume gives it its run id again, and reuses the step
// that succeeded.
func TestStartInputRunResumes(t *testing.T) {
	ctx := context.Background()
	c, _ := startInputServer(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "p.yml")
	flag := filepath.Join(dir, "flag")
	require.NoError(t, os.WriteFile(file, []byte(`type: pipeline
name: flaky
jobs:
  first:
    command: echo first
  check:
    command: test -f `+flag+`
    inputs:
      after: ${{parent.jobs.first.outputs.artifacts}}
`), 0o644))
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "flaky-from-temporal", TaskQueue: plan.DefaultTaskQueue},
		workflows.PipelineName, startInput(t, file))
	require.NoError(t, err)
	require.Error(t, run.Get(ctx, nil), "the flag is missing: check fails")

	require.NoError(t, os.WriteFile(flag, nil, 0o644))
	var stdout, stderr bytes.Buffer
	code := Run(ctx, []string{"job", "resume", "flaky-from-temporal"}, nil, &stdout, &stderr)
	require.Equal(t, ExitOK, code, "stdout:\n%s\nstderr:\n%s", &stdout, &stderr)
	assert.Contains(t, stdout.String(), "run flaky-from-temporal resumed; reusing 1 steps that succeeded: first\n")
	assert.Regexp(t, `(?m)^run flaky-from-temporal succeeded in `, stdout.String())
}

// startInputServer starts a server with porch's search attributes and a
// worker as porch dev starts them, and points porch's commands at it.
func startInputServer(t *testing.T) (client.Client, string) {
	srv, err := devserver.Start(context.Background(), devserver.Options{SearchAttributes: workflows.SearchAttributes()})
	require.NoError(t, err)
	t.Cleanup(func() { _ = srv.Stop() })
	c, err := client.DialContext(context.Background(), client.Options{HostPort: srv.FrontendAddress()})
	require.NoError(t, err)
	t.Cleanup(c.Close)
	home := filepath.Join(t.TempDir(), "home")
	// The default compute's serverless instance types are what a start
	// input's steps, compiled against this server's catalogue, run on.
	w, err := worker.Start(c, worker.Options{Home: home, Computes: []string{""}, Workflows: true})
	require.NoError(t, err)
	t.Cleanup(w.Stop)
	t.Setenv(envHome, home)
	t.Setenv(envAddress, srv.FrontendAddress())
	t.Setenv(envUser, "alice@example.com")
	return c, home
}

// startInput compiles a pipeline with porch compile -o start-input into a
// file and returns that file's JSON, as temporal workflow start
// --input-file sends it.
func startInput(t *testing.T, pipeline string) json.RawMessage {
	var stdout, stderr bytes.Buffer
	code := Run(context.Background(), []string{"compile", "-o", "start-input", pipeline}, nil, &stdout, &stderr)
	require.Equal(t, ExitOK, code, stderr.String())
	file := filepath.Join(t.TempDir(), "input.json")
	require.NoError(t, os.WriteFile(file, stdout.Bytes(), 0o644))
	b, err := os.ReadFile(file)
	require.NoError(t, err)
	return b
}
