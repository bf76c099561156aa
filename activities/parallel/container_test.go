package parallel

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

	"github.com/porch-pipelines/porch/activities/launch"
	"github.com/porch-pipelines/porch/activities/launch/imagetest"
	"github.com/porch-pipelines/porch/activities/stepio"
	"github.com/porch-pipelines/porch/compiler/plan"
)

// containerScript says, for each file, which image it ran in, its process
// and how often init() ran in that process.
const containerScript = `import os

inits = 0

def init():
    global inits
    inits += 1

def run(mini_batch):
    marker = open("/marker").read().strip()
    return ["%s %s pid=%d inits=%d" % (os.path.basename(p), marker, os.getpid(), inits) for p in mini_batch]
`

// TestEntryScriptsRunInOneContainer: a parallel step with an image runs
// its entry-script processes in one container on the node, started once
// for all its mini-batches; init() runs once per process, and the
// container is gone when the step's processes shut down.
func TestEntryScriptsRunInOneContainer(t *testing.T) {
	imagetest.RequirePodman(t)
	rt, err := launch.Resolve(launch.Podman, launch.LookPath)
	require.NoError(t, err)
	img := imagetest.Derive(t, imagetest.Python(t, imagetest.PythonPackages...), []string{"RUN echo in-image > /marker"}, nil)
	node := fmt.Sprintf("h26-n%d", time.Now().UnixNano()%1e6)
	host := &stepio.Host{Home: t.TempDir(), Node: node, Runtime: rt}
	a, p, _ := plannedStepIn(t, host, &plan.Environment{Image: img}, containerScript)

	var wg sync.WaitGroup
	for i := range p.Batches {
		wg.Go(func() {
			_, err := a.RunMiniBatch(context.Background(), MiniBatchInput{Ref: p.Ref, Index: i})
			assert.NoError(t, err)
		})
	}
	wg.Wait()
	name := launch.Name(p.Ref.RunID, p.Ref.StepPath, 1, node)
	assert.Equal(t, []string{name}, imagetest.Running(t, name), "one container runs the node's processes")
	res, err := a.FinishParallel(context.Background(), FinishParallelInput{
		Progress:  ProgressInput{Ref: p.Ref, Counters: ParallelCounters{Batches: p.Batches, Succeeded: p.Batches}},
		Succeeded: true,
	})
	require.NoError(t, err)
	var out string
	for _, o := range res.Outputs {
		if o.Name == "out" {
			out = o.Path
		}
	}
	got, err := os.ReadFile(filepath.Join(out, plan.AppendRowFileName))
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(string(got)), "\n")
	require.Len(t, lines, 12)
	pids := map[string]bool{}
	for _, l := range lines {
		f := strings.Fields(l)
		require.Len(t, f, 4, l)
		assert.Equal(t, "in-image", f[1], "the entry script ran in the image")
		assert.Equal(t, "inits=1", f[3], "init() ran once in its process")
		pids[f[2]] = true
	}
	assert.LessOrEqual(t, len(pids), 3)
	a.Close(context.Background())
	// Waits for the node's container to be removed with its processes.
	assert.Eventually(t, func() bool { return len(imagetest.Running(t, name)) == 0 }, 10*time.Second, 100*time.Millisecond)
	log, err := os.ReadFile(filepath.Join(a.Home, "datastores", "ws", "azureml", "run1", "echo", "artifacts", "logs", "sys", "porch.txt"))
	require.NoError(t, err)
	assert.Equal(t, 1, strings.Count(string(log), "runs the entry scripts in image "+img), string(log))
}

// BenchmarkMiniBatchesInContainer runs the mini-batches of one step with
// its entry scripts on the host and in a container, in one run, after
// each has started its processes: the container's cost per mini-batch,
// which should be none once it runs.
func BenchmarkMiniBatchesInContainer(b *testing.B) {
	// Enough mini-batches (two files each) that a round's mean is not one
	// scheduler hiccup: a trivial mini-batch takes a fraction of a
	// millisecond.
	const benchFiles = 1000
	imagetest.RequirePodman(b)
	rt, err := launch.Resolve(launch.Podman, launch.LookPath)
	require.NoError(b, err)
	img := imagetest.Python(b, imagetest.PythonPackages...)
	measure := func(host *stepio.Host, env *plan.Environment) time.Duration {
		a, p, _ := plannedStepOf(b, host, env, echoScript, benchFiles)
		defer a.Close(context.Background())
		// The first mini-batch starts the processes (and the container).
		_, err := a.RunMiniBatch(context.Background(), MiniBatchInput{Ref: p.Ref, Index: 0})
		require.NoError(b, err)
		start := time.Now()
		for i := 1; i < p.Batches; i++ {
			_, err := a.RunMiniBatch(context.Background(), MiniBatchInput{Ref: p.Ref, Index: i})
			require.NoError(b, err)
		}
		return time.Since(start) / time.Duration(p.Batches-1)
	}
	var onHost, inContainer time.Duration
	for i := range b.N {
		node := fmt.Sprintf("h26-b%d", time.Now().UnixNano()%1e6)
		container := func() {
			inContainer += measure(&stepio.Host{Home: b.TempDir(), Node: node, Runtime: rt}, &plan.Environment{Image: img})
		}
		host := func() { onHost += measure(&stepio.Host{Home: b.TempDir(), Node: node}, nil) }
		// Each goes first in turn: the machine's state drifts.
		if i%2 == 0 {
			container()
			host()
		} else {
			host()
			container()
		}
	}
	b.ReportMetric(onHost.Seconds()/float64(b.N)*1000, "ms/batch-host")
	b.ReportMetric(inContainer.Seconds()/float64(b.N)*1000, "ms/batch-container")
	b.ReportMetric(float64(inContainer)/float64(onHost), "container/host")
}

func TestVisibleGPUs(t *testing.T) {
	assert.Equal(t, []int{1, 3}, visibleGPUs([]string{"OMP_NUM_THREADS=2", "CUDA_VISIBLE_DEVICES=1,3"}))
	assert.Nil(t, visibleGPUs([]string{"OMP_NUM_THREADS=2"}))
}
