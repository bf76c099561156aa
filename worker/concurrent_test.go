package worker_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// peakRSS is the peak resident memory (VmHWM) of process pid, as /proc
// writes it ("242024 kB").
func peakRSS(t *testing.T, pid int) string {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	require.NoError(t, err)
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			return strings.TrimSpace(v)
		}
	}
	return "unknown"
}

// TestFiftyPipelinesAtOnceAllSucceed submits 50 three-step pipelines at
// once to one server and worker: every run succeeds, each step's output
// holds what its own run wrote.
func TestFiftyPipelinesAtOnceAllSucceed(t *testing.T) {
	const runs = 50
	h := newHarness(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "pipeline.yml")
	require.NoError(t, os.WriteFile(path, []byte(`type: pipeline
inputs:
  tag: none
jobs:
  a:
    command: echo ${{inputs.tag}} > ${{outputs.out}}/tag.txt
    inputs:
      tag: ${{parent.inputs.tag}}
    outputs:
      out:
        type: uri_folder
  b:
    command: cat ${{inputs.in}}/tag.txt > ${{outputs.out}}/tag.txt
    inputs:
      in: ${{parent.jobs.a.outputs.out}}
    outputs:
      out:
        type: uri_folder
  c:
    command: cmp ${{inputs.x}}/tag.txt ${{inputs.y}}/tag.txt
    inputs:
      x: ${{parent.jobs.a.outputs.out}}
      y: ${{parent.jobs.b.outputs.out}}
`), 0o644))
	// The runs are submitted one after another, none waiting for another.
	start := time.Now()
	ids := make([]string, runs)
	errs := make([]error, runs)
	var wg sync.WaitGroup
	for i := range runs {
		run := h.start(compile(t, path, map[string]string{"inputs.tag": fmt.Sprintf("run-%d", i)}))
		ids[i] = run.GetID()
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			errs[i] = run.Get(ctx, nil)
		}()
	}
	wg.Wait()
	for i, err := range errs {
		require.NoError(t, err, "run %d (%s)", i, ids[i])
		out := h.localPath(fmt.Sprintf("azureml://datastores/workspaceblobstore/paths/azureml/%s/b/out/tag.txt", ids[i]))
		data, err := os.ReadFile(out)
		require.NoError(t, err)
		assert.Equal(t, fmt.Sprintf("run-%d\n", i), string(data))
	}
	t.Logf("%d pipelines of 3 steps at once: all succeeded in %s; peak RSS of server and worker %s", runs, time.Since(start).Round(time.Millisecond), peakRSS(t, os.Getpid()))
}

// TestTwoRunsWritingOneFixedPathDoNotMix runs one pipeline twice at once,
// its output at a fixed path: each run's attempt stages apart (by run and
// step execution), so both succeed and the folder holds each run's files,
// all of them, each written by its own run. The runs wait for each other
// once both have staged, so their attempts overlap.
func TestTwoRunsWritingOneFixedPathDoNotMix(t *testing.T) {
	const files = 200
	h := newHarness(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "pipeline.yml")
	require.NoError(t, os.WriteFile(path, []byte(fmt.Sprintf(`type: pipeline
inputs:
  tag: none
jobs:
  write:
    command: >-
      touch %[1]s/${{inputs.tag}};
      while [ $(ls %[1]s | wc -l) -lt 2 ]; do sleep 0.05; done;
      for i in $(seq 1 %[2]d); do echo ${{inputs.tag}} > ${{outputs.out}}/${{inputs.tag}}-$i.txt; done
    inputs:
      tag: ${{parent.inputs.tag}}
    outputs:
      out:
        type: uri_folder
        path: azureml://datastores/workspaceblobstore/paths/shared/out
`, dir+"/started", files)), 0o644))
	require.NoError(t, os.Mkdir(filepath.Join(dir, "started"), 0o755))
	var runs []string
	errs := make([]error, 2)
	var wg sync.WaitGroup
	for i, tag := range []string{"alpha", "beta"} {
		run := h.start(compile(t, path, map[string]string{"inputs.tag": tag}))
		runs = append(runs, run.GetID())
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			errs[i] = run.Get(ctx, nil)
		}()
	}
	wg.Wait()
	for i, err := range errs {
		require.NoError(t, err, "run %s", runs[i])
	}
	out := h.localPath("azureml://datastores/workspaceblobstore/paths/shared/out")
	entries, err := os.ReadDir(out)
	require.NoError(t, err)
	assert.Len(t, entries, 2*files, "every file of both runs, nothing else")
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(out, e.Name()))
		require.NoError(t, err)
		tag, _, _ := strings.Cut(e.Name(), "-")
		assert.Equal(t, tag+"\n", string(data), "%s holds what its own run wrote", e.Name())
	}
	left, err := filepath.Glob(filepath.Join(filepath.Dir(out), ".porch-staging.*"))
	require.NoError(t, err)
	assert.Empty(t, left, "no staging is left")
}
