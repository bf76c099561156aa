package devserver

import (
	"context"
	"fmt"
	"testing"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/workflow"
)

const (
	// chainSteps is the length of BenchmarkActivityChain's chain: long enough
	// to dwarf the workflow's start and end, short enough to finish in seconds
	// untuned (~50 ms a step).
	chainSteps = 50
	// windowActivities and window shape BenchmarkActivityWindow.
	windowActivities = 500
	window           = 32
)

var configs = []struct {
	name    string
	untuned bool
}{{"tuned", false}, {"untuned", true}}

// BenchmarkActivityChain measures one sequential no-op activity step, on a
// server with porch's dynamic config and on one with Temporal's defaults.
func BenchmarkActivityChain(b *testing.B) {
	for _, bc := range configs {
		b.Run(bc.name, func(b *testing.B) {
			s := startServer(b, Options{SearchAttributes: testAttrs, untuned: bc.untuned})
			c := connect(b, s)
			runChain(b, c, "warm-up", "bench", 1)
			b.ResetTimer()
			start := time.Now()
			for i := range b.N {
				runChain(b, c, fmt.Sprintf("chain-%d", i), "bench", chainSteps)
			}
			elapsed := time.Since(start)
			b.ReportMetric(elapsed.Seconds()*1000/float64(b.N*chainSteps), "ms/step")
		})
	}
}

// BenchmarkActivityWindow measures throughput of no-op activities run
// through a sliding window, the way porch runs parallel work.
func BenchmarkActivityWindow(b *testing.B) {
	for _, bc := range configs {
		b.Run(bc.name, func(b *testing.B) {
			s := startServer(b, Options{untuned: bc.untuned})
			c := connect(b, s)
			ctx := context.Background()
			b.ResetTimer()
			start := time.Now()
			for i := range b.N {
				wr, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
					ID: fmt.Sprintf("window-%d", i), TaskQueue: taskQueue,
				}, "Window", windowActivities)
				if err != nil {
					b.Fatal(err)
				}
				if err := wr.Get(ctx, nil); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N*windowActivities)/time.Since(start).Seconds(), "activities/s")
		})
	}
}

// windowed runs n no-op activities, at most window at a time.
func windowed(ctx workflow.Context, n int) (int, error) {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: 30 * time.Second})
	var pending []workflow.Future
	wait := func() error {
		err := pending[0].Get(ctx, nil)
		pending = pending[1:]
		return err
	}
	for i := range n {
		if len(pending) == window {
			if err := wait(); err != nil {
				return 0, err
			}
		}
		pending = append(pending, workflow.ExecuteActivity(ctx, "Noop", i))
	}
	for len(pending) > 0 {
		if err := wait(); err != nil {
			return 0, err
		}
	}
	return n, nil
}
