package devserver

import (
	"fmt"
	"testing"
	"time"
)

// chainSteps is the length of the benchmark's activity chain: long enough to
// dwarf the workflow's start and end, short enough to finish in seconds
// untuned (~50 ms a step).
const chainSteps = 50

// BenchmarkActivityChain measures one sequential no-op activity step, on a
// server with porch's dynamic config and on one with Temporal's defaults.
func BenchmarkActivityChain(b *testing.B) {
	for _, bc := range []struct {
		name    string
		untuned bool
	}{{"tuned", false}, {"untuned", true}} {
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
