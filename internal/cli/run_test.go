package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/porch-pipelines/porch/internal/devserver"
	"github.com/porch-pipelines/porch/workflows"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	enums "go.temporal.io/api/enums/v1"
	workflowpb "go.temporal.io/api/workflow/v1"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// syncBuffer is a bytes.Buffer safe to read while Run writes it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

const slowPipeline = `$schema: https://azuremlschemas.azureedge.net/latest/pipelineJob.schema.json
type: pipeline
name: slow
inputs:
  pidfile: /tmp/unused
jobs:
  nap:
    command: sleep 120 & echo $! > ${{inputs.pidfile}}; wait
    inputs:
      pidfile: ${{parent.inputs.pidfile}}
`

// TestRunInterrupted checks the exit code of a run canceled with the
// embedded server: 130, after the step's process is gone.
func TestRunInterrupted(t *testing.T) {
	dir := t.TempDir()
	t.Setenv(envHome, filepath.Join(dir, "home"))
	t.Setenv(envAddress, "")
	file := filepath.Join(dir, "slow.yml")
	require.NoError(t, os.WriteFile(file, []byte(slowPipeline), 0o644))
	pidfile := filepath.Join(dir, "sleep.pid")

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stdout, stderr syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- Run(ctx, []string{"run", "--set", "inputs.pidfile=" + pidfile, file}, nil, &stdout, &stderr)
	}()
	// Waits for the step to start its child process.
	require.Eventually(t, func() bool {
		data, err := os.ReadFile(pidfile)
		return err == nil && len(bytes.TrimSpace(data)) > 0
	}, time.Minute, 20*time.Millisecond, "the step never started; stderr: %s", &stderr)
	cancel()
	code := <-done
	assert.Equal(t, ExitInterrupted, code, "stderr: %s", stderr.String())
	assert.Contains(t, stderr.String(), "porch: interrupted: canceling run slow-")
	assert.Regexp(t, `porch: run slow-\w+ canceled\n`, stderr.String())
	assert.True(t, strings.HasPrefix(stdout.String(), "run slow-"), stdout.String())
}

func TestExitCodes(t *testing.T) {
	dir := t.TempDir()
	t.Setenv(envHome, filepath.Join(dir, "home"))
	t.Setenv(envAddress, "")
	bad := filepath.Join(dir, "bad.yml")
	require.NoError(t, os.WriteFile(bad, []byte("type: pipeline\njobs:\n  a:\n    type: spark\n"), 0o644))
	tests := []struct {
		args []string
		code int
	}{
		{[]string{"version"}, ExitOK},
		{[]string{"validate", bad}, ExitFailure},
		{[]string{"validate"}, ExitUsage},
		{[]string{"nope"}, ExitUsage},
		{[]string{"run", "--nope", bad}, ExitUsage},
		{[]string{"job", "list", "--limit", "0"}, ExitUsage},
		{[]string{"job", "list"}, ExitFailure},
	}
	for _, tt := range tests {
		var stdout, stderr bytes.Buffer
		code := Run(context.Background(), tt.args, nil, &stdout, &stderr)
		assert.Equal(t, tt.code, code, "porch %s: stderr %s", strings.Join(tt.args, " "), stderr.String())
		if code != ExitOK {
			assert.True(t, strings.HasPrefix(stderr.String(), "porch: ") || strings.Contains(stderr.String(), "error:"),
				"porch %s: errors start with porch: %q", strings.Join(tt.args, " "), stderr.String())
		}
	}
}

// TestRunOnServerWithoutSearchAttributes checks that a server lacking
// porch's search attributes gets the command that registers them.
func TestRunOnServerWithoutSearchAttributes(t *testing.T) {
	srv, err := devserver.Start(context.Background(), devserver.Options{})
	require.NoError(t, err)
	defer srv.Stop()
	dir := t.TempDir()
	t.Setenv(envHome, filepath.Join(dir, "home"))
	file := filepath.Join(dir, "p.yml")
	require.NoError(t, os.WriteFile(file, []byte("type: pipeline\njobs:\n  a:\n    command: echo hi\n"), 0o644))
	var stdout, stderr bytes.Buffer
	code := Run(context.Background(), []string{"run", "--detach", "--address", srv.FrontendAddress(), file}, nil, &stdout, &stderr)
	assert.Equal(t, ExitFailure, code)
	assert.Contains(t, stderr.String(), "porch's search attributes are not registered on this server; register them once with: "+
		"temporal operator search-attribute create --address "+srv.FrontendAddress())
}

func TestInterruptedBeforeStart(t *testing.T) {
	dir := t.TempDir()
	t.Setenv(envHome, filepath.Join(dir, "home"))
	t.Setenv(envAddress, "")
	file := filepath.Join(dir, "slow.yml")
	require.NoError(t, os.WriteFile(file, []byte(slowPipeline), 0o644))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var stdout, stderr bytes.Buffer
	code := Run(ctx, []string{"run", file}, nil, &stdout, &stderr)
	assert.Equal(t, ExitInterrupted, code, stderr.String())
}

func TestStepsOfATerminatedRunEndWithIt(t *testing.T) {
	started := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	closed := started.Add(90 * time.Second)
	steps := []workflows.StepState{
		{Path: "a", Status: workflows.StatusSucceeded, Started: started, Ended: started.Add(time.Second)},
		{Path: "b", Status: workflows.StatusRunning, Started: started, Detail: "312/400 mini-batches, 2 failed, 8 running"},
		{Path: "c", Status: workflows.StatusWaiting},
		{Path: "d", Status: workflows.StatusRunning, Started: started, Detail: "3/5 steps succeeded, 2 running"},
	}
	info := &workflowpb.WorkflowExecutionInfo{Status: enums.WORKFLOW_EXECUTION_STATUS_TERMINATED, CloseTime: timestamppb.New(closed)}
	got := endedWithRun(slices.Clone(steps), info)
	assert.Equal(t, steps[0], got[0])
	for _, s := range got[1:] {
		assert.Equal(t, workflows.StatusCanceled, s.Status, s.Path)
		assert.Equal(t, "the run was terminated", s.Error, s.Path)
	}
	took, ok := stepDuration(closed.Add(time.Hour), got[1])
	assert.True(t, ok)
	assert.Equal(t, 90*time.Second, took, "a step's duration stops when its run was terminated")
	assert.True(t, got[2].Ended.IsZero(), "a step that never started has no end")
	assert.Equal(t, "312/400 mini-batches, 2 failed", got[1].Detail, "nothing counts as running any more")
	assert.Equal(t, "3/5 steps succeeded", got[3].Detail)
	running := &workflowpb.WorkflowExecutionInfo{Status: enums.WORKFLOW_EXECUTION_STATUS_RUNNING}
	assert.Equal(t, steps, endedWithRun(slices.Clone(steps), running), "a running run's steps are as it says")
}
