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
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	sdkworker "go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/porch-pipelines/porch/compiler"
	"github.com/porch-pipelines/porch/compiler/plan"
)

// chainLength is the number of steps in the chain benchmarks.
const chainLength = 100

// BenchmarkChain measures porch's per-step overhead on the embedded server:
// a chain of trivial command steps (each a child workflow running `true` in
// a real process), beside two Temporal baselines in the same run: a chain of
// child workflows that each run one no-op activity (the floor of porch's
// design), and a chain of plain no-op activities. Its steps are forced to
// run (each is still decided and recorded for reuse); a last run of the
// same chain reuses them all.
//
//	go test ./worker -run '^$' -bench Chain -benchtime 3x
func BenchmarkChain(b *testing.B) {
	home := b.TempDir()
	f := filepath.Join(b.TempDir(), "chain.yml")
	require.NoError(b, os.WriteFile(f, []byte(chainYAML(chainLength)), 0o644))
	p, diags := compiler.Compile(f, compiler.Options{})
	require.False(b, diags.HasErrors(), diags.Error())

	// Every step runs (force_rerun): each is decided and recorded for
	// reuse, and runs.
	forced := *p
	forced.Settings.ForceRerun = true
	b.Run("porch-command-steps", func(b *testing.B) { benchPorch(b, home, f, &forced) })
	// The same chain again, unforced: every step is reused.
	b.Run("porch-reused-steps", func(b *testing.B) { benchPorch(b, home, f, p) })
	b.Run("baseline-child-workflow-activity", func(b *testing.B) {
		benchBaseline(b, "ChainOfChildren")
	})
	b.Run("baseline-activities", func(b *testing.B) {
		benchBaseline(b, "ChainOfActivities")
	})
}

// benchPorch runs the plan p of the file f b.N times on a worker of home.
func benchPorch(b *testing.B, home, f string, p *plan.Plan) {
	h := &harness{home: home}
	w := startWorker(b, h.home)
	defer w.Stop()
	src, _ := os.ReadFile(f)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		run, err := startRun(p, src)
		require.NoError(b, err)
		require.NoError(b, run.Get(context.Background(), nil))
	}
	reportPerStep(b)
}

func reportPerStep(b *testing.B) {
	b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N*chainLength), "ms/step")
}

func chainYAML(n int) string {
	var s strings.Builder
	s.WriteString("type: pipeline\nname: chain\njobs:\n  s0:\n    command: \"true\"\n    outputs:\n      out:\n")
	for i := 1; i < n; i++ {
		fmt.Fprintf(&s, "  s%d:\n    command: \"true\"\n    inputs:\n      x: ${{parent.jobs.s%d.outputs.out}}\n    outputs:\n      out:\n", i, i-1)
	}
	return s.String()
}

const baselineQueue = "bench-baseline"

func benchBaseline(b *testing.B, wf string) {
	w := sdkworker.New(temporalClient, baselineQueue, sdkworker.Options{})
	w.RegisterWorkflowWithOptions(chainOfChildren, workflow.RegisterOptions{Name: "ChainOfChildren"})
	w.RegisterWorkflowWithOptions(chainOfActivities, workflow.RegisterOptions{Name: "ChainOfActivities"})
	w.RegisterWorkflowWithOptions(oneActivity, workflow.RegisterOptions{Name: "OneActivity"})
	w.RegisterActivityWithOptions(noop, activity.RegisterOptions{Name: "Noop"})
	require.NoError(b, w.Start())
	defer w.Stop()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		run, err := temporalClient.ExecuteWorkflow(context.Background(),
			client.StartWorkflowOptions{TaskQueue: baselineQueue}, wf, chainLength)
		require.NoError(b, err)
		require.NoError(b, run.Get(context.Background(), nil))
	}
	reportPerStep(b)
}

func noop(context.Context) error { return nil }

var baselineActivity = workflow.ActivityOptions{StartToCloseTimeout: time.Minute}

func oneActivity(ctx workflow.Context) error {
	return workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, baselineActivity), "Noop").Get(ctx, nil)
}

func chainOfChildren(ctx workflow.Context, n int) error {
	for i := 0; i < n; i++ {
		if err := workflow.ExecuteChildWorkflow(ctx, "OneActivity").Get(ctx, nil); err != nil {
			return err
		}
	}
	return nil
}

func chainOfActivities(ctx workflow.Context, n int) error {
	ctx = workflow.WithActivityOptions(ctx, baselineActivity)
	for i := 0; i < n; i++ {
		if err := workflow.ExecuteActivity(ctx, "Noop").Get(ctx, nil); err != nil {
			return err
		}
	}
	return nil
}
