package worker_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
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

// chainLength is the number of steps in the chain benchmarks; chainRounds
// how many times each chain runs, in turn, in one BenchmarkChain: twice
// in each place of a round's order (see inTurn).
const (
	chainLength = 100
	chainRounds = 8
)

// inTurn is the order in which round r runs n chains: the first order
// turned r places, so that over the rounds each chain runs as often in
// each place. A chain's place in a round moved its time by up to 10%:
// the same build run twice a round, one run always in the middle of three,
// came out at 0.89–1.04× the other over eight rounds (median 0.93×).
func inTurn(r, n int) []int {
	order := make([]int, n)
	for i := range order {
		order[i] = (i + r) % n
	}
	return order
}

// BenchmarkChain measures porch's per-step overhead on the embedded server:
// a chain of trivial command steps (each a child workflow running `true` in
// a real process), beside two Temporal baselines in the same run: a chain of
// child workflows that each run one no-op activity (the floor of porch's
// design), and a chain of plain no-op activities. Its command steps are
// forced to run (each is still decided for reuse); the reused chain is the
// same chain unforced, every step reusing a first run's outputs.
//
// The four chains run in turn, chainRounds times, each round in another
// order (inTurn), so a loaded machine slows them alike; it reports each
// one's median per step, with the spread (min–max), and the medians of
// each round's ratios to the floor.
//
// In make bench it runs first (its file's name sorts first): the other
// benchmarks remove their folders when they end, thousands of files, and
// on an ext4 without a journal (this project's machines) a file created
// in the minutes after that costs up to a millisecond of CPU, the kernel
// passing over every recently freed inode before it takes one. The floor
// creates no file; a command step creates ten.
//
//	go test ./worker -run '^$' -bench '^BenchmarkChain$' -benchtime 1x
func BenchmarkChain(b *testing.B) {
	p, src := startBench(b, "chain.yml", chainYAML(chainLength))
	// Every step runs (force_rerun): each is decided for reuse, and runs.
	forced := *p
	forced.Settings.ForceRerun = true
	// A first unforced run records every step: the reused chain's runs
	// reuse them all.
	runPorch(b, p, src)

	chains := []chainFigures{
		{name: "porch command step", run: func() { runPorch(b, &forced, src) }},
		{name: "porch reused step", run: func() { runPorch(b, p, src) }},
		{name: "child-workflow floor", run: func() { runBaseline(b, "ChainOfChildren") }},
		{name: "activity chain", run: func() { runBaseline(b, "ChainOfActivities") }},
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for r := 0; r < chainRounds; r++ {
			for _, c := range inTurn(r, len(chains)) {
				start, cpu := time.Now(), processCPU(b)
				chains[c].run()
				chains[c].ms = append(chains[c].ms, float64(time.Since(start).Microseconds())/1000/chainLength)
				chains[c].cpu = append(chains[c].cpu, float64((processCPU(b)-cpu).Microseconds())/1000/chainLength)
			}
		}
	}
	b.StopTimer()
	floor := chains[2]
	var table strings.Builder
	fmt.Fprintf(&table, "chain of %d steps, %d rounds: median (min–max) a step, of wall time and of the process's CPU time\n", chainLength, len(floor.ms))
	fmt.Fprintf(&table, "(server, workers and the commands they ran); ratios to the floor of the same round\n")
	for _, c := range chains {
		ms, ratio := spreadOf(c.ms), spreadOf(ratiosOf(c.ms, floor.ms))
		cpu, cpuRatio := spreadOf(c.cpu), spreadOf(ratiosOf(c.cpu, floor.cpu))
		fmt.Fprintf(&table, "  %-20s wall %6.1f ms (%.1f–%.1f) %.2f× floor (%.2f–%.2f)   CPU %6.1f ms (%.1f–%.1f) %.2f× floor (%.2f–%.2f)\n",
			c.name, ms.median, ms.min, ms.max, ratio.median, ratio.min, ratio.max,
			cpu.median, cpu.min, cpu.max, cpuRatio.median, cpuRatio.min, cpuRatio.max)
	}
	b.Log("\n" + table.String())
	b.ReportMetric(spreadOf(chains[0].ms).median, "command-ms/step")
	b.ReportMetric(spreadOf(chains[1].ms).median, "reused-ms/step")
	b.ReportMetric(spreadOf(floor.ms).median, "floor-ms/step")
	b.ReportMetric(spreadOf(chains[3].ms).median, "activity-ms/step")
	b.ReportMetric(spreadOf(ratiosOf(chains[0].ms, floor.ms)).median, "command/floor")
	b.ReportMetric(spreadOf(ratiosOf(chains[1].ms, floor.ms)).median, "reused/floor")
	b.ReportMetric(spreadOf(ratiosOf(chains[0].cpu, floor.cpu)).median, "command-cpu/floor-cpu")
	b.ReportMetric(spreadOf(ratiosOf(chains[1].cpu, floor.cpu)).median, "reused-cpu/floor-cpu")
}

// startBench compiles the pipeline yml (written as file name) and starts a
// porch worker and the baselines' worker for the rest of the benchmark; it
// returns the plan and its source.
func startBench(b *testing.B, name, yml string) (*plan.Plan, []byte) {
	f := filepath.Join(b.TempDir(), name)
	require.NoError(b, os.WriteFile(f, []byte(yml), 0o644))
	p, diags := compiler.Compile(f, compiler.Options{})
	require.False(b, diags.HasErrors(), diags.Error())
	w := startWorker(b, b.TempDir())
	b.Cleanup(w.Stop)
	b.Cleanup(startBaselineWorker(b))
	return p, []byte(yml)
}

// chainFigures are one chain's milliseconds a step, of wall time and of
// CPU time, one a round.
type chainFigures struct {
	name    string
	run     func()
	ms, cpu []float64
}

// ratiosOf are xs over the floor's figures of the same rounds.
func ratiosOf(xs, floor []float64) []float64 {
	out := make([]float64, len(xs))
	for i := range xs {
		out[i] = xs[i] / floor[i]
	}
	return out
}

// processCPU is the CPU time this process (the embedded server and every
// worker) and the commands it ran have used: on a loaded machine it
// measures a chain's cost where wall time measures mostly the wait for a
// core.
func processCPU(b *testing.B) time.Duration {
	var total time.Duration
	for _, who := range []int{syscall.RUSAGE_SELF, syscall.RUSAGE_CHILDREN} {
		var ru syscall.Rusage
		require.NoError(b, syscall.Getrusage(who, &ru))
		total += time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	return total
}

// figureSpread is a median and the range around it.
type figureSpread struct{ median, min, max float64 }

func spreadOf(xs []float64) figureSpread {
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	m := s[n/2]
	if n%2 == 0 {
		m = (s[n/2-1] + s[n/2]) / 2
	}
	return figureSpread{median: m, min: s[0], max: s[n-1]}
}

// runPorch runs the plan p of source src to its end.
func runPorch(b *testing.B, p *plan.Plan, src []byte) {
	run, err := startRun(p, src)
	require.NoError(b, err)
	require.NoError(b, run.Get(context.Background(), nil))
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

// startBaselineWorker starts the worker of the Temporal baselines.
func startBaselineWorker(b *testing.B) (stop func()) {
	w := sdkworker.New(temporalClient, baselineQueue, sdkworker.Options{})
	w.RegisterWorkflowWithOptions(chainOfChildren, workflow.RegisterOptions{Name: "ChainOfChildren"})
	w.RegisterWorkflowWithOptions(chainOfActivities, workflow.RegisterOptions{Name: "ChainOfActivities"})
	w.RegisterWorkflowWithOptions(oneActivity, workflow.RegisterOptions{Name: "OneActivity"})
	w.RegisterWorkflowWithOptions(fanOutOfChildren, workflow.RegisterOptions{Name: "FanOutOfChildren"})
	w.RegisterActivityWithOptions(noop, activity.RegisterOptions{Name: "Noop"})
	require.NoError(b, w.Start())
	return w.Stop
}

// runBaseline runs the baseline workflow wf over a chain of chainLength.
func runBaseline(b *testing.B, wf string) {
	runBaselineOf(b, wf, chainLength)
}

// runBaselineOf runs the baseline workflow wf over n steps.
func runBaselineOf(b *testing.B, wf string, n int) {
	run, err := temporalClient.ExecuteWorkflow(context.Background(),
		client.StartWorkflowOptions{TaskQueue: baselineQueue}, wf, n)
	require.NoError(b, err)
	require.NoError(b, run.Get(context.Background(), nil))
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
