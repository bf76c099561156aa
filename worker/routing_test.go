package worker_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/porch-pipelines/porch/compiler"
	"github.com/porch-pipelines/porch/compiler/plan"
	"github.com/porch-pipelines/porch/worker"
	"github.com/porch-pipelines/porch/workflows"
)

// registerRouting registers a kubernetes compute with two instance types,
// each for nodes labelled zone=a or zone=b, and returns the catalogue.
func registerRouting(t *testing.T, compute string) *plan.Catalog {
	one := plan.ResourceList{MilliCPU: 1000, MemoryBytes: 1 << 30}
	return applyInstanceTypes(t, compute,
		plan.InstanceType{Name: compute + "-a", NodeSelector: []plan.Label{{Key: "zone", Value: "a"}}, Requests: one, Limits: one},
		plan.InstanceType{Name: compute + "-b", NodeSelector: []plan.Label{{Key: "zone", Value: "b"}}, Requests: one, Limits: one})
}

// compileAgainst writes a pipeline's YAML to dir/p.yml, where its relative
// paths resolve, and compiles it against a catalogue.
func compileAgainst(t *testing.T, dir, src string, cat *plan.Catalog) *plan.Plan {
	t.Helper()
	path := filepath.Join(dir, "p.yml")
	require.NoError(t, os.WriteFile(path, []byte(src), 0o644))
	p, diags := compiler.Compile(path, compiler.Options{Catalog: cat})
	require.False(t, diags.HasErrors(), diags.Error())
	return p
}

// applyInstanceTypes applies instance types and, unless compute is "",
// registers a kubernetes compute of that name; the test removes them when
// it ends. It returns the catalogue.
func applyInstanceTypes(t *testing.T, compute string, types ...plan.InstanceType) *plan.Catalog {
	t.Helper()
	ctx := context.Background()
	_, err := workflows.RegisterCatalogEntry(ctx, temporalClient, workflows.CatalogEntry{InstanceTypes: types})
	require.NoError(t, err)
	if compute != "" {
		_, err = workflows.RegisterCatalogEntry(ctx, temporalClient, workflows.CatalogEntry{Compute: &plan.Compute{
			Name: compute, Type: plan.ComputeKubernetes, Namespace: plan.DefaultKubernetesNamespace}})
		require.NoError(t, err)
	}
	t.Cleanup(func() {
		if compute != "" {
			_ = workflows.RemoveCatalogEntry(ctx, temporalClient, workflows.CatalogRemoval{Kind: workflows.KindCompute, Name: compute})
		}
		for _, it := range types {
			_ = workflows.RemoveCatalogEntry(ctx, temporalClient, workflows.CatalogRemoval{Kind: workflows.KindInstanceType, Name: it.Name})
		}
	})
	cat, err := workflows.GetCatalog(ctx, temporalClient)
	require.NoError(t, err)
	return &cat
}

// TestStepsRunOnTheirInstanceTypesWorkersWithinCapacity runs two steps of
// instance type a and one of b on a kubernetes compute served by two
// worker processes: one labelled zone=a with room for one step of a, one
// serving b. Each step runs on its type's worker, and the two steps of a
// run one after the other.
func TestStepsRunOnTheirInstanceTypesWorkersWithinCapacity(t *testing.T) {
	const compute = "route"
	home := t.TempDir()
	w := startWorker(t, home) // workflows only: the steps run on the kubernetes compute
	t.Cleanup(w.Stop)
	cat := registerRouting(t, compute) // the catalogue workflow needs the worker

	homeA, homeB := t.TempDir(), t.TempDir()
	startRoutedWorkerProcess(t, homeA, compute, "node-a", worker.Options{
		Labels: []plan.Label{{Key: "zone", Value: "a"}}, Capacity: plan.ResourceList{MilliCPU: 1500, MemoryBytes: 1 << 30}})
	startRoutedWorkerProcess(t, homeB, compute, "node-b", worker.Options{
		InstanceTypes: []string{compute + "-b"}, Labels: []plan.Label{{Key: "zone", Value: "b"}},
		Capacity: plan.ResourceList{MilliCPU: 4000, MemoryBytes: 4 << 30}})

	dir := t.TempDir()
	logFile := filepath.Join(dir, "steps.log")
	step := func(name, typ string) string {
		return fmt.Sprintf(`  %s:
    compute: azureml:%s
    resources:
      instance_type: %s
    command: >-
      echo "start %s $(pwd)" >> %s && sleep 1 && echo "end %s" >> %s
`, name, compute, typ, name, logFile, name, logFile)
	}
	src := "type: pipeline\njobs:\n" + step("first", compute+"-a") + step("second", compute+"-a") + step("other", compute+"-b")
	p := compileAgainst(t, dir, src, cat)
	h := &harness{t: t, home: home}
	_, err := h.run(p)
	require.NoError(t, err)

	data, err := os.ReadFile(logFile)
	require.NoError(t, err)
	where := map[string]string{}
	var order []string // the log lines of instance type a's steps
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		f := strings.Fields(line)
		require.GreaterOrEqual(t, len(f), 2, "log line %q", line)
		if f[0] == "start" {
			where[f[1]] = f[2]
		}
		if f[1] != "other" {
			order = append(order, f[0]+" "+f[1])
		}
	}
	for _, s := range []string{"first", "second"} {
		assert.True(t, strings.HasPrefix(where[s], homeA), "step %s of type a ran on worker a, in %s", s, where[s])
	}
	assert.True(t, strings.HasPrefix(where["other"], homeB), "the step of type b ran on worker b, in %s", where["other"])
	require.Len(t, order, 4, "%s", data)
	first := strings.Fields(order[0])[1]
	second := "second"
	if first == second {
		second = "first"
	}
	assert.Equal(t, []string{"start " + first, "end " + first, "start " + second, "end " + second}, order,
		"worker a has room for one step of type a: the first to start ends before the next starts\n%s", data)
}

// TestAKilledWorkersStepFinishesOnAnotherOfItsInstanceType kills (SIGKILL)
// the worker process running a step; after the heartbeat timeout the step
// is retried, and the other worker serving its instance type finishes it.
func TestAKilledWorkersStepFinishesOnAnotherOfItsInstanceType(t *testing.T) {
	const compute = "failover"
	home := t.TempDir()
	w := startWorker(t, home) // workflows only: the step runs on the kubernetes compute
	t.Cleanup(w.Stop)
	cat := registerRouting(t, compute)

	homes := []string{t.TempDir(), t.TempDir()}
	var procs []*exec.Cmd
	for i, hm := range homes {
		procs = append(procs, startRoutedWorkerProcess(t, hm, compute, fmt.Sprintf("node-%d", i), worker.Options{
			InstanceTypes: []string{compute + "-a"}, Labels: []plan.Label{{Key: "zone", Value: "a"}},
			Capacity: plan.ResourceList{MilliCPU: 1000, MemoryBytes: 1 << 30}}))
	}

	dir := t.TempDir()
	logFile, mark := filepath.Join(dir, "steps.log"), filepath.Join(dir, "first-attempt")
	src := fmt.Sprintf(`type: pipeline
jobs:
  train:
    compute: azureml:%s
    resources:
      instance_type: %s-a
    command: >-
      echo "start $(pwd)" >> %s &&
      if mkdir %s 2>/dev/null; then echo $$ > %s/pid; sleep 600; fi &&
      echo "end $(pwd)" >> %s
`, compute, compute, logFile, mark, mark, logFile)
	p := compileAgainst(t, dir, src, cat)
	h := &harness{t: t, home: home}
	run := h.start(p)

	// Waits for the first attempt to be running (its pid written), to kill
	// its worker mid-step.
	var pid int
	require.Eventually(t, func() bool {
		b, err := os.ReadFile(filepath.Join(mark, "pid"))
		if err != nil {
			return false
		}
		pid, err = strconv.Atoi(strings.TrimSpace(string(b)))
		return err == nil
	}, time.Minute, 20*time.Millisecond, "the first attempt starts")
	data, err := os.ReadFile(logFile)
	require.NoError(t, err)
	victim := 0
	if strings.Contains(string(data), homes[1]) {
		victim = 1
	}
	require.NoError(t, procs[victim].Process.Kill())
	// The step's processes die with their worker (their lifeline).
	assertPIDGone(t, strconv.Itoa(pid))

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	require.NoError(t, run.Get(ctx, nil), "the step is retried after the heartbeat timeout")
	data, err = os.ReadFile(logFile)
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	require.Len(t, lines, 3, "%s", data)
	assert.Contains(t, lines[0], "start "+homes[victim], "%s", data)
	assert.Contains(t, lines[1], "start "+homes[1-victim], "the other worker of the instance type took the retry\n%s", data)
	assert.Contains(t, lines[2], "end "+homes[1-victim], "%s", data)
}
