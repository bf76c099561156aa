package entryscript

import (
	"context"
	"path/filepath"
	"testing"
	"time"
)

// BenchmarkRoundTrip is porch's cost per mini-batch outside Temporal: a
// request to a warm process, a trivial run() over 10 paths, and its events
// back; "result" also writes run()'s result to a file, as append_row_to
// does.
func BenchmarkRoundTrip(b *testing.B) {
	for _, name := range []string{"discard", "result"} {
		b.Run(name, func(b *testing.B) {
			f := newFixture(b, "def run(mini_batch):\n    return mini_batch\n")
			p := f.pool(b, 1)
			files := paths(10)
			ctx := context.Background()
			// Start the process (and init()) outside the measured loop.
			if _, err := p.Run(ctx, Request{Files: files}); err != nil {
				b.Fatal(err)
			}
			r := Request{Files: files, RunTimeout: time.Minute, ProgressTimeout: time.Minute}
			if name == "result" {
				r.ResultPath = filepath.Join(f.out, "result.txt")
			}
			for b.Loop() {
				r.Index++
				res, err := p.Run(ctx, r)
				if err != nil || res.Returned != 10 {
					b.Fatal(res, err)
				}
			}
		})
	}
}
