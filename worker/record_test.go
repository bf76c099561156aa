package worker_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"

	"github.com/porch-pipelines/porch/compiler"
	"github.com/porch-pipelines/porch/compiler/plan"
	"github.com/porch-pipelines/porch/workflows"
)

// TestRecordHistories regenerates the replay fixtures in
// workflows/testdata/histories from real runs of the samples:
//
//	PORCH_RECORD_HISTORIES=1 go test ./worker -run TestRecordHistories
//
// Record them again only when a workflow change is meant to alter history,
// and keep the old files as replay fixtures for the versions still running.
func TestRecordHistories(t *testing.T) {
	if os.Getenv("PORCH_RECORD_HISTORIES") == "" {
		t.Skip("set PORCH_RECORD_HISTORIES=1 to regenerate workflows/testdata/histories")
	}
	out := filepath.Join("..", "workflows", "testdata", "histories")
	require.NoError(t, os.MkdirAll(out, 0o755))
	h := newHarness(t)
	for _, sample := range []string{"hello", "branches", "nested", "train"} {
		id, _ := h.run(compile(t, filepath.Join("..", "samples", sample, "pipeline.yml"), nil))
		for _, wf := range runWorkflows(t, id) {
			name := "v1-" + sample + "-" + strings.ReplaceAll(strings.TrimPrefix(wf, id+"/"), "/", "-")
			if wf == id {
				name = "v1-" + sample + "-pipeline"
			}
			writeHistory(t, wf, filepath.Join(out, name+".json"))
		}
	}
}

// TestRecordParallelHistories records parallel steps' histories: a step
// that succeeds with retries, one that crosses a threshold, and a resumed
// run.
//
//	PORCH_RECORD_HISTORIES=1 go test ./worker -run TestRecordParallelHistories
func TestRecordParallelHistories(t *testing.T) {
	if os.Getenv("PORCH_RECORD_HISTORIES") == "" {
		t.Skip("set PORCH_RECORD_HISTORIES=1 to regenerate workflows/testdata/histories")
	}
	out := filepath.Join("..", "workflows", "testdata", "histories")
	h := newHarness(t)
	record := func(name, id string) { recordRun(t, out, "v1-parallel-"+name, id) }
	retried, _ := parallelCase{files: append(names("f", 5), "flaky1.txt"), settings: `    mini_batch_size: "2"
    resources:
      instance_count: 2
    max_concurrency_per_instance: 2
    retry_settings:
      max_retries: 1`}.write(t)
	id, err := h.run(compile(t, retried, nil))
	require.NoError(t, err)
	record("retried", id)

	failing, _ := parallelCase{files: append(names("f", 3), names("fail", 3)...), settings: `    mini_batch_size: "1"
    max_concurrency_per_instance: 1
    mini_batch_error_threshold: 1
    retry_settings:
      max_retries: 0`}.write(t)
	id, err = h.run(compile(t, failing, nil))
	require.Error(t, err)
	record("threshold", id)

	resumed, state := parallelCase{files: names("f", 4), settings: `    mini_batch_size: "1"
    max_concurrency_per_instance: 1
    mini_batch_error_threshold: 0
    retry_settings:
      max_retries: 0`}.write(t)
	require.NoError(t, os.WriteFile(filepath.Join(state, "poison-f002.txt"), nil, 0o644))
	id, err = h.run(compile(t, resumed, nil))
	require.Error(t, err)
	require.NoError(t, os.Remove(filepath.Join(state, "poison-f002.txt")))
	run, _, err := workflows.Resume(context.Background(), temporalClient, id)
	require.NoError(t, err)
	require.NoError(t, run.Get(context.Background(), nil))
	record("resumed", id)
}

// recordRun writes the histories of a run's workflows to out, as
// <prefix>-pipeline.json and <prefix>-<step path with dashes>.json.
func recordRun(t *testing.T, out, prefix, id string) {
	for _, wf := range runWorkflows(t, id) {
		step := "pipeline"
		if wf != id {
			step = strings.ReplaceAll(strings.TrimPrefix(wf, id+"/"), "/", "-")
		}
		writeHistory(t, wf, filepath.Join(out, prefix+"-"+step+".json"))
	}
}

// runWorkflows lists a run's workflow ids: the run and every step.
func runWorkflows(t *testing.T, runID string) []string {
	resp, err := temporalClient.ListWorkflow(context.Background(), &workflowservice.ListWorkflowExecutionsRequest{
		Query: workflows.AttrRun + " = '" + runID + "'",
	})
	require.NoError(t, err)
	var ids []string
	for _, e := range resp.Executions {
		ids = append(ids, e.Execution.WorkflowId)
	}
	return ids
}

func writeHistory(t *testing.T, workflowID, file string) {
	writeExecution(t, workflowID, "", file)
}

// TestRecordSweepHistories records sweep steps' histories: a grid sweep
// whose best model feeds the next step, and one whose bandit policy stops
// a trial.
//
//	PORCH_RECORD_HISTORIES=1 go test ./worker -run TestRecordSweepHistories
func TestRecordSweepHistories(t *testing.T) {
	if os.Getenv("PORCH_RECORD_HISTORIES") == "" {
		t.Skip("set PORCH_RECORD_HISTORIES=1 to regenerate workflows/testdata/histories")
	}
	out := filepath.Join("..", "workflows", "testdata", "histories")
	h := newHarness(t)
	record := func(name, id string) { recordRun(t, out, "v1-sweep-"+name, id) }
	grid, _ := sweepCase{qualities: "[bad, good]", steps: 2, sleep: 0.05, sweep: `    sampling_algorithm: grid
    limits:
      max_total_trials: 2
      max_concurrent_trials: 1`}.write(t)
	id, err := h.run(compile(t, grid, nil))
	require.NoError(t, err)
	record("grid", id)

	bandit, _ := sweepCase{qualities: "[good, bad]", steps: 8, sleep: 0.5, sweep: `    sampling_algorithm: grid
    limits:
      max_total_trials: 2
    early_termination:
      type: bandit
      slack_amount: 0.2
      delay_evaluation: 1`}.write(t)
	id, err = h.run(compile(t, bandit, nil))
	require.NoError(t, err)
	record("bandit", id)
}

// TestRecordSweepOutputPathHistory records a sweep whose output names a
// path (the version of SweepStep that copies the best trial's output
// there), apart from TestRecordSweepHistories so the older sweep fixtures
// stay as recorded:
//
//	PORCH_RECORD_HISTORIES=1 go test ./worker -run TestRecordSweepOutputPathHistory
func TestRecordSweepOutputPathHistory(t *testing.T) {
	if os.Getenv("PORCH_RECORD_HISTORIES") == "" {
		t.Skip("set PORCH_RECORD_HISTORIES=1 to regenerate workflows/testdata/histories")
	}
	out := filepath.Join("..", "workflows", "testdata", "histories")
	h := newHarness(t)
	path, _ := sweepCase{qualities: "[bad, good]", steps: 2, sleep: 0.05, sweep: `    sampling_algorithm: grid
    limits:
      max_total_trials: 2
      max_concurrent_trials: 1
    outputs:
      model:
        type: uri_folder
        path: azureml://datastores/workspaceblobstore/paths/best/${{name}}/`}.write(t)
	id, err := h.run(compile(t, path, nil))
	require.NoError(t, err)
	recordRun(t, out, "v2-sweep-path", id)
}

// TestRecordCatalogHistory records the catalogue workflow's history after
// registering, replacing and removing entries. The workflow never ends: the
// fixture is a running history, which the replayer replays as far as it goes.
//
//	PORCH_RECORD_HISTORIES=1 go test ./worker -run TestRecordCatalogHistory
func TestRecordCatalogHistory(t *testing.T) {
	if os.Getenv("PORCH_RECORD_HISTORIES") == "" {
		t.Skip("set PORCH_RECORD_HISTORIES=1 to regenerate workflows/testdata/histories")
	}
	newHarness(t)
	ctx := context.Background()
	dir := t.TempDir()
	entries := []workflows.CatalogEntry{
		{Datastore: &plan.Datastore{Name: "nfs", Type: plan.DatastoreLocal, Path: dir}},
		{Datastore: &plan.Datastore{Name: "nfs", Type: plan.DatastoreLocal, Path: filepath.Join(dir, "v2")}},
		{Data: &plan.Asset{Name: "iris", Version: "1", Type: "uri_file", Path: filepath.Join(dir, "iris.csv")}},
		{Component: &plan.ComponentAsset{Name: "train", Version: "1", Source: "type: command\ncommand: echo hi\nenvironment: {image: python}\n", Dir: dir}},
	}
	for _, e := range entries {
		_, err := workflows.RegisterCatalogEntry(ctx, temporalClient, e)
		require.NoError(t, err)
	}
	_, err := workflows.RegisterCatalogEntry(ctx, temporalClient, entries[2])
	require.Error(t, err, "a data version is immutable")
	require.NoError(t, workflows.RemoveCatalogEntry(ctx, temporalClient, workflows.CatalogRemoval{Kind: workflows.KindData, Name: "iris", Version: "1"}))
	writeHistory(t, workflows.CatalogWorkflowID, filepath.Join("..", "workflows", "testdata", "histories", "v1-catalog.json"))
}

// TestRecordCatalogComputeHistory records the catalogue workflow's history
// after registering, replacing and removing computes and instance types.
//
//	PORCH_RECORD_HISTORIES=1 go test ./worker -run TestRecordCatalogComputeHistory
func TestRecordCatalogComputeHistory(t *testing.T) {
	if os.Getenv("PORCH_RECORD_HISTORIES") == "" {
		t.Skip("set PORCH_RECORD_HISTORIES=1 to regenerate workflows/testdata/histories")
	}
	newHarness(t)
	ctx := context.Background()
	cluster := plan.Compute{Name: "cpu-cluster", Type: plan.ComputeAML, Size: plan.DefaultSize, Tier: plan.TierDedicated, MaxInstances: 4}
	pool := []plan.Label{{Key: "pool", Value: "ml"}}
	small := plan.InstanceType{Name: "small", NodeSelector: pool, Requests: plan.ResourceList{MilliCPU: 500, MemoryBytes: 1 << 30}}
	entries := []workflows.CatalogEntry{
		{Compute: &cluster},
		{Compute: &plan.Compute{Name: "k8s", Type: plan.ComputeKubernetes, Namespace: "default", NodeSelector: pool}},
		{InstanceTypes: []plan.InstanceType{small, {Name: plan.DefaultInstanceTypeName,
			Requests: plan.ResourceList{MilliCPU: 250, MemoryBytes: 1 << 30}}}},
		{InstanceTypes: []plan.InstanceType{small}},
	}
	for _, e := range entries {
		_, err := workflows.RegisterCatalogEntry(ctx, temporalClient, e)
		require.NoError(t, err)
	}
	_, err := workflows.RegisterCatalogEntry(ctx, temporalClient, workflows.CatalogEntry{InstanceTypes: []plan.InstanceType{
		{Name: "web", NodeSelector: []plan.Label{{Key: "pool", Value: "web"}}, Requests: small.Requests}}})
	require.Error(t, err, "an instance type outside the kubernetes compute's nodeSelector")
	require.NoError(t, workflows.RemoveCatalogEntry(ctx, temporalClient, workflows.CatalogRemoval{Kind: workflows.KindCompute, Name: "cpu-cluster"}))
	require.NoError(t, workflows.RemoveCatalogEntry(ctx, temporalClient, workflows.CatalogRemoval{Kind: workflows.KindInstanceType, Name: plan.DefaultInstanceTypeName}))
	writeHistory(t, workflows.CatalogWorkflowID, filepath.Join("..", "workflows", "testdata", "histories", "v1-catalog-compute.json"))
}

// TestRecordServerlessHistories records a run whose command and parallel
// steps pick their serverless instance type when they run.
//
//	PORCH_RECORD_HISTORIES=1 go test ./worker -run TestRecordServerlessHistories
func TestRecordServerlessHistories(t *testing.T) {
	if os.Getenv("PORCH_RECORD_HISTORIES") == "" {
		t.Skip("set PORCH_RECORD_HISTORIES=1 to regenerate workflows/testdata/histories")
	}
	out := filepath.Join("..", "workflows", "testdata", "histories")
	h := newHarness(t)
	file, _ := parallelCase{files: names("f", 2), settings: `    mini_batch_size: "1"`}.write(t)
	src, err := os.ReadFile(file)
	require.NoError(t, err)
	src = append(src, []byte("  hello:\n    command: echo hello\n")...)
	require.NoError(t, os.WriteFile(file, src, 0o644))
	// Compiled against a catalogue, the serverless steps carry
	// defaultinstancetype's requests.
	p, diags := compiler.Compile(file, compiler.Options{Catalog: &plan.Catalog{}})
	require.False(t, diags.HasErrors(), diags.Error())
	id, err := h.run(p)
	require.NoError(t, err)
	recordRun(t, out, "v1-serverless", id)
}

// TestRecordStartedHistory records a run started as temporal workflow start
// starts the input porch compile -o start-input prints: by a plain client,
// with no run id in the input and no search attributes or memo. Only the
// Pipeline's history differs from a run porch started (its marker and its
// upserted attributes), so only it is kept.
//
//	PORCH_RECORD_HISTORIES=1 go test ./worker -run TestRecordStartedHistory
func TestRecordStartedHistory(t *testing.T) {
	if os.Getenv("PORCH_RECORD_HISTORIES") == "" {
		t.Skip("set PORCH_RECORD_HISTORIES=1 to regenerate workflows/testdata/histories")
	}
	newHarness(t)
	ctx := context.Background()
	p := compile(t, filepath.Join("..", "samples", "hello", "pipeline.yml"), nil)
	p.Settings.SubmittedBy = "alice@example.com"
	input, err := json.Marshal(workflows.NewPipelineInput(p, ""))
	require.NoError(t, err)
	run, err := temporalClient.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "started-hello", TaskQueue: plan.DefaultTaskQueue},
		workflows.PipelineName, json.RawMessage(input))
	require.NoError(t, err)
	require.NoError(t, run.Get(ctx, nil))
	file := filepath.Join("..", "workflows", "testdata", "histories", "v2-started-pipeline.json")
	writeHistory(t, run.GetID(), file)
	b, err := os.ReadFile(file)
	require.NoError(t, err)
	for _, want := range []string{"EVENT_TYPE_MARKER_RECORDED", "EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES", `"started-hello/a"`} {
		require.True(t, strings.Contains(string(b), want), "the history has no %s", want)
	}
}

// TestRecordNoWorkerHistory records a command step that waits over a
// minute for a worker of its compute (the step says so in its current
// details), then runs when one starts.
//
//	PORCH_RECORD_HISTORIES=1 go test ./worker -run TestRecordNoWorkerHistory
func TestRecordNoWorkerHistory(t *testing.T) {
	if os.Getenv("PORCH_RECORD_HISTORIES") == "" {
		t.Skip("set PORCH_RECORD_HISTORIES=1 to regenerate workflows/testdata/histories")
	}
	home := t.TempDir()
	w := startWorker(t, home) // workflows only: nobody serves compute "late" yet
	t.Cleanup(w.Stop)
	h := &harness{t: t, home: home}
	run := h.start(compile(t, writePipeline(t, "type: pipeline\njobs:\n  wait:\n    compute: azureml:late\n    command: echo ran\n"), nil))
	time.Sleep(noWorkerWait)
	startWorkerProcess(t, home, "late", "late-node")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	require.NoError(t, run.Get(ctx, nil))
	recordRun(t, filepath.Join("..", "workflows", "testdata", "histories"), "v3-no-worker", run.GetID())
}

// noWorkerWait is past the minute a command step waits before it asks for
// a worker.
const noWorkerWait = 70 * time.Second
