package worker_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/api/workflowservice/v1"

	"github.com/porch-pipelines/porch/activities/objectstore/s3test"
	"github.com/porch-pipelines/porch/worker"
	"github.com/porch-pipelines/porch/workflows"
)

// reuseChain writes a four-step chain: s2 reads the folder data, s3 runs
// a script from the code folder src; every step works for a second and a
// half, so a run that reuses them all is much faster than one that runs
// them. notDeterministic marks s4 is_deterministic: false.
func reuseChain(t *testing.T, dir string, notDeterministic bool) string {
	t.Helper()
	s4 := ""
	if notDeterministic {
		s4 = "\n    is_deterministic: false"
	}
	f := filepath.Join(dir, "chain.yml")
	require.NoError(t, os.WriteFile(f, []byte(fmt.Sprintf(`type: pipeline
name: reuse-chain
inputs:
  data:
    type: uri_folder
    path: %s
jobs:
  s1:
    command: sleep 1.5 && echo one > ${{outputs.out}}/v.txt
    outputs:
      out:
  s2:
    command: sleep 1.5 && cat ${{inputs.prev}}/v.txt ${{inputs.data}}/d.txt > ${{outputs.out}}/v.txt
    inputs:
      prev: ${{parent.jobs.s1.outputs.out}}
      data: ${{parent.inputs.data}}
    outputs:
      out:
  s3:
    code: ./src
    command: sleep 1.5 && sh run.sh ${{inputs.prev}} ${{outputs.out}}
    inputs:
      prev: ${{parent.jobs.s2.outputs.out}}
    outputs:
      out:
  s4:%s
    command: sleep 1.5 && cat ${{inputs.prev}}/v.txt > ${{outputs.out}}/v.txt && echo four >> ${{outputs.out}}/v.txt
    inputs:
      prev: ${{parent.jobs.s3.outputs.out}}
    outputs:
      out:
`, filepath.Join(dir, "data"), s4)), 0o644))
	return f
}

// writeAged writes a file dated a minute back, as a file edited a while
// before the run (its hash may be kept).
func writeAged(t *testing.T, p, content string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
	require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
	old := time.Now().Add(-time.Minute)
	require.NoError(t, os.Chtimes(p, old, old))
}

// reasons are the steps' statuses, and why those that ran ran.
func reasons(t *testing.T, runID string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for path, s := range steps(t, runID) {
		out[path] = string(s.Status)
		if s.Reuse != nil && s.Reuse.Reason != "" {
			out[path] += ": " + s.Reuse.Reason
		}
	}
	return out
}

// TestAChainRunTwiceReusesEveryStep is issue 14's acceptance on the
// embedded server: the second run of an unchanged chain runs nothing; a
// changed input, code file, is_deterministic: false, force_rerun and a
// deleted output each make the steps they touch run, and say why.
func TestAChainRunTwiceReusesEveryStep(t *testing.T) {
	h := newHarness(t)
	dir := t.TempDir()
	writeAged(t, filepath.Join(dir, "data", "d.txt"), "two\n")
	writeAged(t, filepath.Join(dir, "src", "run.sh"), "cat \"$1/v.txt\" > \"$2/v.txt\"; echo three >> \"$2/v.txt\"\n")
	chain := reuseChain(t, dir, false)
	run := func() (string, time.Duration) {
		t.Helper()
		start := time.Now()
		id, err := h.run(compileReusable(t, chain, nil))
		require.NoError(t, err)
		return id, time.Since(start)
	}

	first, firstTook := run()
	assert.Equal(t, map[string]string{"s1": "succeeded: first run", "s2": "succeeded: first run", "s3": "succeeded: first run", "s4": "succeeded: first run"}, reasons(t, first))
	second, secondTook := run()
	assert.Equal(t, map[string]string{"s1": "reused", "s2": "reused", "s3": "reused", "s4": "reused"}, reasons(t, second))
	assert.Less(t, secondTook, firstTook/4, "a run that reuses every step (%v) takes less than a quarter of one that runs them (%v)", secondTook, firstTook)
	st := steps(t, second)
	require.NotNil(t, st["s4"].Reuse)
	assert.Equal(t, first, st["s4"].Reuse.FromRun)
	out := ""
	for _, o := range st["s4"].Outputs {
		if o.Name == "out" {
			out = o.URI
		}
	}
	assert.Contains(t, out, "/"+first+"/s4/", "a reused step's outputs are the recorded ones")
	// Temporal lists each reused step as a ReusedStep with PorchStatus
	// reused, under the step's own workflow id.
	require.Eventually(t, func() bool {
		resp, err := temporalClient.ListWorkflow(context.Background(), &workflowservice.ListWorkflowExecutionsRequest{
			Query: fmt.Sprintf("%s = '%s' AND %s = '%s' AND WorkflowType = '%s'",
				workflows.AttrRun, second, workflows.AttrStatus, workflows.PorchReused, workflows.ReusedStepName),
		})
		return err == nil && len(resp.GetExecutions()) == 4
	}, 30*time.Second, 100*time.Millisecond, "the four reused steps are found by their status")
	record(t, "v2-reused-step", second)
	got, err := os.ReadFile(filepath.Join(h.localPath(out), "v.txt"))
	require.NoError(t, err)
	assert.Equal(t, "one\ntwo\nthree\nfour\n", string(got))

	writeAged(t, filepath.Join(dir, "data", "d.txt"), "TWO\n")
	changed, _ := run()
	got2 := reasons(t, changed)
	assert.Equal(t, "reused", got2["s1"])
	assert.Regexp(t, `^succeeded: input "data" changed \(content [0-9a-f]{8}… → [0-9a-f]{8}…\)$`, got2["s2"])
	assert.Equal(t, `succeeded: dependency "s2" ran`, got2["s3"])
	assert.Equal(t, `succeeded: dependency "s3" ran`, got2["s4"])
	record(t, "v2-reuse", changed)
	// Decided on the DAG's worker, s1's ReusedStep started with its
	// PorchStatus.
	record(t, "v2-reuse-decided-here", changed)

	writeAged(t, filepath.Join(dir, "src", "run.sh"), "cat \"$1/v.txt\" > \"$2/v.txt\"; echo THREE >> \"$2/v.txt\"\n")
	edited, _ := run()
	assert.Equal(t, map[string]string{"s1": "reused", "s2": "reused", "s3": "succeeded: code changed: run.sh", "s4": `succeeded: dependency "s3" ran`}, reasons(t, edited))

	chain = reuseChain(t, dir, true)
	nondet, _ := run()
	assert.Equal(t, map[string]string{"s1": "reused", "s2": "reused", "s3": "reused", "s4": "succeeded: is_deterministic: false"}, reasons(t, nondet))

	p := compileReusable(t, chain, nil)
	p.Settings.ForceRerun = true
	forced, err := h.run(p)
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"s1": "succeeded: force_rerun", "s2": "succeeded: force_rerun", "s3": "succeeded: force_rerun", "s4": "succeeded: force_rerun"}, reasons(t, forced))

	// The forced run left no record: s1's key still names the first
	// run's output.
	for _, o := range steps(t, first)["s1"].Outputs {
		if o.Name == "out" {
			require.NoError(t, os.RemoveAll(h.localPath(o.URI)))
		}
	}
	gone, _ := run()
	got3 := reasons(t, gone)
	assert.Equal(t, `succeeded: recorded output "out" is gone`, got3["s1"])
	assert.Equal(t, `succeeded: dependency "s1" ran`, got3["s2"], "s2 is keyed by the output it reads, which s1 wrote anew")
}

// TestWorkersSharingAnS3DatastoreShareReuseRecords runs a pipeline whose
// default datastore is on MinIO with worker process A serving its steps,
// then, with A stopped, the same pipeline with worker process B, whose
// porch home is its own: B reuses A's steps through the records A left on
// the object store.
func TestWorkersSharingAnS3DatastoreShareReuseRecords(t *testing.T) {
	_, _, _, bucket := s3test.Start(t)
	w, err := worker.Start(temporalClient, worker.Options{Home: t.TempDir(), Workflows: true}) // workflows only
	require.NoError(t, err)
	t.Cleanup(w.Stop)
	store := registerS3(t, bucket)
	dir := t.TempDir()
	f := filepath.Join(dir, "p.yml")
	require.NoError(t, os.WriteFile(f, []byte(fmt.Sprintf(`type: pipeline
name: shared-reuse
settings:
  default_datastore: azureml:%s
jobs:
  make:
    command: echo made > ${{outputs.out}}/m.txt
    outputs:
      out:
  use:
    command: cat ${{inputs.src}}/m.txt > ${{outputs.out}}/u.txt
    inputs:
      src: ${{parent.jobs.make.outputs.out}}
    outputs:
      out:
`, store.Name)), 0o644))
	h := &harness{t: t, home: t.TempDir()}

	homeA := t.TempDir()
	a := startWorkerProcess(t, homeA, "", "node-a")
	first, err := h.run(compileReusable(t, f, nil))
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"make": "succeeded: first run", "use": "succeeded: first run"}, reasons(t, first))
	require.NoError(t, a.Process.Signal(syscall.SIGTERM))
	_ = a.Wait()

	homeB := t.TempDir()
	startWorkerProcess(t, homeB, "", "node-b")
	second, err := h.run(compileReusable(t, f, nil))
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"make": "reused", "use": "reused"}, reasons(t, second))
	st := steps(t, second)
	require.NotNil(t, st["use"].Reuse)
	assert.Equal(t, first, st["use"].Reuse.FromRun)
	assert.NoDirExists(t, filepath.Join(homeB, "datastores", store.Name, "porch-reuse"),
		"worker B read the records from the object store, not from a folder of its own")
	assert.NoDirExists(t, filepath.Join(homeA, "datastores", store.Name, "porch-reuse"))
}
