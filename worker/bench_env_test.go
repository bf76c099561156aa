package worker_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/porch-pipelines/porch/activities/launch"
	"github.com/porch-pipelines/porch/activities/launch/imagetest"
	"github.com/porch-pipelines/porch/worker"
)

// BenchmarkEnvironmentChain runs a chain of 20 trivial steps in a warm
// image (podman) and the same chain on the host runtime, in one run, and
// reports the time a container adds to a step.
func BenchmarkEnvironmentChain(b *testing.B) {
	image := imagetest.Busybox(b)
	rt, err := launch.Resolve(launch.Podman, launch.LookPath)
	require.NoError(b, err)
	const n = 20
	var src strings.Builder
	src.WriteString("type: pipeline\nname: envchain\njobs:\n")
	for i := range n {
		fmt.Fprintf(&src, "  s%d:\n    command: echo ${{inputs.x}} > ${{outputs.y}}/y\n    environment: {image: %s}\n", i, image)
		if i == 0 {
			src.WriteString("    inputs:\n      x: '1'\n")
		} else {
			fmt.Fprintf(&src, "    inputs:\n      x: ${{parent.jobs.s%d.outputs.y}}\n", i-1)
		}
		src.WriteString("    outputs:\n      y:\n        type: uri_folder\n")
	}
	file := filepath.Join(b.TempDir(), "chain.yml")
	require.NoError(b, os.WriteFile(file, []byte(src.String()), 0o644))
	run := func(rt launch.Runtime) time.Duration {
		home := b.TempDir()
		w, err := worker.Start(temporalClient, worker.Options{Home: home, Computes: []string{""}, Workflows: true, Runtime: rt})
		require.NoError(b, err)
		defer w.Stop()
		p := compileB(b, file)
		p.Settings.ForceRerun = true
		srcBytes, _ := os.ReadFile(file)
		start := time.Now()
		r, err := startRun(p, srcBytes)
		require.NoError(b, err)
		require.NoError(b, r.Get(context.Background(), nil))
		return time.Since(start)
	}
	run(rt) // warms the image and its mlflow probe
	var host, podman time.Duration
	for range b.N {
		podman += run(rt)
		host += run(launch.Runtime{Kind: launch.Host})
	}
	perStep := func(d time.Duration) float64 { return d.Seconds() / float64(n*b.N) }
	b.ReportMetric(perStep(podman), "s/step-podman")
	b.ReportMetric(perStep(host), "s/step-host")
	b.ReportMetric(perStep(podman)-perStep(host), "s/step-added")
}
