package entryscript

import (
	"context"
	"testing"
)

// BenchmarkRoundTrip is porch's cost per mini-batch outside Temporal: a
// request to a warm process, a trivial run() over 10 paths, and its events
// back.
func BenchmarkRoundTrip(b *testing.B) {
	f := newFixture(b, "def run(mini_batch):\n    return mini_batch\n")
	p := f.pool(b, 1)
	files := paths(10)
	ctx := context.Background()
	if _, err := p.Run(ctx, Request{Files: files}); err != nil { // start the process outside the loop
		b.Fatal(err)
	}
	i := 0
	for b.Loop() {
		i++
		res, err := p.Run(ctx, Request{Index: i, Files: files, RunTimeout: 60e9, ProgressTimeout: 60e9})
		if err != nil || res.Returned != 10 {
			b.Fatal(res, err)
		}
	}
}
