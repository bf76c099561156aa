package worker_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/workflow"
)

// fanoutWidth is the number of steps of the fan-out benchmark;
// fanoutRounds how many times each of its two runs, in turn, each going
// first in half of the rounds (inTurn).
const (
	fanoutWidth  = 200
	fanoutRounds = 6
)

// BenchmarkFanout measures how many steps a second porch runs side by
// side on the embedded server: a root command step and fanoutWidth-1
// trivial command steps reading its output (forced to run, as
// BenchmarkChain's), beside a Temporal baseline in the same run: a
// workflow starting fanoutWidth children at once, each running one no-op
// activity. The two run in turn, fanoutRounds times; it reports the
// medians of steps a second, with the spread, and of each round's ratio to
// the baseline.
//
//	go test ./worker -run '^$' -bench '^BenchmarkFanout$' -benchtime 1x
func BenchmarkFanout(b *testing.B) {
	p, src := startBench(b, "fanout.yml", fanoutYAML(fanoutWidth))
	p.Settings.ForceRerun = true

	var porch, baseline []float64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for r := 0; r < fanoutRounds; r++ {
			for _, which := range inTurn(r, 2) {
				start := time.Now()
				if which == 0 {
					runPorch(b, p, src)
					porch = append(porch, fanoutWidth/time.Since(start).Seconds())
				} else {
					runBaselineOf(b, "FanOutOfChildren", fanoutWidth)
					baseline = append(baseline, fanoutWidth/time.Since(start).Seconds())
				}
			}
		}
	}
	b.StopTimer()
	var table strings.Builder
	fmt.Fprintf(&table, "fan-out of %d steps, %d rounds: median (min–max) steps a second; ratios to the baseline of the same round\n",
		fanoutWidth, len(porch))
	for _, c := range []struct {
		name string
		xs   []float64
	}{{"porch fan-out", porch}, {"children at once", baseline}} {
		s, ratio := spreadOf(c.xs), spreadOf(ratiosOf(c.xs, baseline))
		fmt.Fprintf(&table, "  %-17s %6.1f steps/s (%.1f–%.1f) %.2f× baseline (%.2f–%.2f)\n",
			c.name, s.median, s.min, s.max, ratio.median, ratio.min, ratio.max)
	}
	b.Log("\n" + table.String())
	b.ReportMetric(spreadOf(porch).median, "porch-steps/s")
	b.ReportMetric(spreadOf(baseline).median, "baseline-steps/s")
	b.ReportMetric(spreadOf(ratiosOf(porch, baseline)).median, "porch/baseline")
}

// fanOutOfChildren starts n children at once, each running one no-op
// activity, and waits for them all.
func fanOutOfChildren(ctx workflow.Context, n int) error {
	futures := make([]workflow.ChildWorkflowFuture, n)
	for i := range futures {
		futures[i] = workflow.ExecuteChildWorkflow(ctx, "OneActivity")
	}
	for _, f := range futures {
		if err := f.Get(ctx, nil); err != nil {
			return err
		}
	}
	return nil
}
