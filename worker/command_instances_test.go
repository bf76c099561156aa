package worker_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/porch-pipelines/porch/compiler/plan"
	"github.com/porch-pipelines/porch/worker"
)

// rendezvousScript is a two-rank job that needs both ranks at once: rank 0
// listens on MASTER_ADDR:MASTER_PORT, rank 1 connects and says hello, and
// each writes what it did, with its working folder, to the file named by
// its argument.
const rendezvousScript = `import os, socket, sys, time

rank, out = int(os.environ["RANK"]), sys.argv[1]
addr, port = os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"])
if rank == 0:
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("0.0.0.0", port))
    s.listen(1)
    s.settimeout(60)
    conn, _ = s.accept()
    said = conn.recv(100).decode()
    line = "rank 0 of %s heard %r" % (os.environ["WORLD_SIZE"], said)
else:
    deadline = time.time() + 60
    while True:
        try:
            c = socket.create_connection((addr, port), timeout=5)
            break
        except OSError:
            if time.time() > deadline:
                raise
            time.sleep(0.1)
    c.sendall(b"hello from rank %d" % rank)
    c.close()
    line = "rank %d of %s said hello" % (rank, os.environ["WORLD_SIZE"])
with open(out, "a") as f:
    f.write("%s in %s\n" % (line, os.getcwd()))
`

// TestADistributedStepSpreadsItsInstancesOverWorkers runs a pytorch step
// with instance_count 2 on a kubernetes compute served by two worker
// processes with room for one instance each: each runs one instance, and
// rank 1 reaches rank 0 at the MASTER_ADDR and MASTER_PORT porch gave
// both.
func TestADistributedStepSpreadsItsInstancesOverWorkers(t *testing.T) {
	const compute = "gang"
	home := t.TempDir()
	w := startWorker(t, home) // workflows only: the step runs on the kubernetes compute
	t.Cleanup(w.Stop)
	cat := registerRouting(t, compute)
	homes := []string{t.TempDir(), t.TempDir()}
	for i, hm := range homes {
		startRoutedWorkerProcess(t, hm, compute, fmt.Sprintf("node-%d", i), worker.Options{
			InstanceTypes: []string{compute + "-a"}, Labels: []plan.Label{{Key: "zone", Value: "a"}},
			Capacity: plan.ResourceList{MilliCPU: 1000, MemoryBytes: 1 << 30}})
	}

	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "src"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "src", "rdv.py"), []byte(rendezvousScript), 0o644))
	out := filepath.Join(dir, "ranks.log")
	src := fmt.Sprintf(`type: pipeline
jobs:
  train:
    compute: azureml:%s
    resources:
      instance_type: %s-a
      instance_count: 2
    distribution:
      type: pytorch
      process_count_per_instance: 1
    code: ./src
    command: /usr/bin/python3 rdv.py %s
`, compute, compute, out)
	p := compileAgainst(t, dir, src, cat)
	h := &harness{t: t, home: home}
	run := h.start(p)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	require.NoError(t, run.Get(ctx, nil))

	got := lines(t, out)
	sort.Strings(got)
	require.Len(t, got, 2, "%v", got)
	assert.Contains(t, got[0], "rank 0 of 2 heard 'hello from rank 1' in ")
	assert.Contains(t, got[1], "rank 1 of 2 said hello in ")
	where := func(line string) string { return line[strings.LastIndex(line, " in ")+4:] }
	var ran []string
	for _, hm := range homes {
		for _, l := range got {
			if strings.HasPrefix(where(l), hm) {
				ran = append(ran, hm)
			}
		}
	}
	assert.ElementsMatch(t, homes, ran, "each worker ran one instance: %v", got)
	// The replay fixture of a step spread over workers comes from this run:
	//
	//	PORCH_RECORD_HISTORIES=1 go test ./worker -run TestADistributedStepSpreadsItsInstancesOverWorkers
	if os.Getenv("PORCH_RECORD_HISTORIES") != "" {
		recordRun(t, filepath.Join("..", "workflows", "testdata", "histories"), "v1-command-instances", run.GetID())
	}
}

// TestAStepAboveItsInstanceTypesMemoryLimitFails runs a step of an
// instance type with a 64Mi memory limit on a worker process: the step
// allocates 200Mi and fails as OOMKilled, with the limit and the peak.
func TestAStepAboveItsInstanceTypesMemoryLimitFails(t *testing.T) {
	const compute = "oom"
	home := t.TempDir()
	w := startWorker(t, home) // workflows only: the step runs on the kubernetes compute
	t.Cleanup(w.Stop)
	typ := plan.InstanceType{Name: "tiny",
		Requests: plan.ResourceList{MilliCPU: 100, MemoryBytes: 32 << 20},
		Limits:   plan.ResourceList{MilliCPU: 1000, MemoryBytes: 64 << 20}}
	cat := applyInstanceTypes(t, compute, typ)
	startRoutedWorkerProcess(t, t.TempDir(), compute, "node-oom", worker.Options{
		InstanceTypes: []string{typ.Name}, Capacity: plan.ResourceList{MilliCPU: 1000, MemoryBytes: 1 << 30}})

	dir := t.TempDir()
	src := fmt.Sprintf(`type: pipeline
jobs:
  hog:
    compute: azureml:%s
    resources:
      instance_type: tiny
    command: /usr/bin/python3 -c 'import time; b = bytearray(200 << 20); time.sleep(60)'
`, compute)
	p := compileAgainst(t, dir, src, cat)
	h := &harness{t: t, home: home}
	_, err := h.run(p)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "instance 0 exceeded the instance type's memory limit 64Mi (peak ")
	assert.Contains(t, err.Error(), "exit code 137, as Kubernetes' OOMKilled")
}
