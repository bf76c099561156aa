package reuse

import (
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/porch-pipelines/porch/activities/stepio"
	"github.com/porch-pipelines/porch/compiler/plan"
)

// BenchmarkDecideUnchangedFolder decides reuse for a step whose input is a
// folder of 10,000 files, 1 GiB in all (PORCH_REUSE_BENCH_MIB changes the
// size), that has not changed since its hashes were kept: a fresh Hasher
// per decision, as after a worker's restart, reads them back (its clock
// an hour on, as a worker deciding a later run: the files' inode-change
// times are then past the racy window). It reports
// beside it the first (cold) hash by porch and a raw sha256sum of the same
// files.
//
//	go test -run '^$' -bench DecideUnchangedFolder -benchtime 3x ./activities/reuse/
func BenchmarkDecideUnchangedFolder(b *testing.B) {
	mib := 1024
	if v := os.Getenv("PORCH_REUSE_BENCH_MIB"); v != "" {
		var err error
		mib, err = strconv.Atoi(v)
		require.NoError(b, err)
	}
	const files = 10000
	data := b.TempDir()
	writeFolder(b, data, files, int64(mib)<<20/files)
	home := b.TempDir()
	kept := filepath.Join(home, "cache", "reuse")
	in := DecideInput{Pipeline: "bench", RunID: "run", DefaultDatastore: testDS,
		Step:   plan.Step{Name: "s", Path: "s", Type: plan.StepCommand, Command: &plan.Command{Template: plan.Template{Source: "true"}}},
		Inputs: []plan.Input{{Name: "data", Type: "uri_folder", Value: plan.Value{Kind: plan.ValueData, Data: &plan.Data{Path: data}}}}}
	decide := func() Decision {
		a := &Activities{Host: &stepio.Host{Home: home}, Hasher: &Hasher{Dir: kept, clock: later}}
		d, err := a.DecideReuse(context.Background(), in)
		require.NoError(b, err)
		return d
	}
	start := time.Now()
	cold := decide()
	coldTime := time.Since(start)
	rawTime := -1.0
	if sum, err := exec.LookPath("sha256sum"); err == nil {
		start = time.Now()
		cmd := exec.Command("sh", "-c", `find "$1" -type f -print0 | xargs -0 "$2" >/dev/null`, "sh", data, sum)
		require.NoError(b, cmd.Run())
		rawTime = time.Since(start).Seconds()
	}
	b.ResetTimer()
	for range b.N {
		if d := decide(); d.Key != cold.Key {
			b.Fatalf("the key changed without a change: %s", d.Reason)
		}
	}
	// Metrics after the loop: ResetTimer drops those reported before it.
	b.ReportMetric(b.Elapsed().Seconds()/float64(b.N), "decide-s")
	b.ReportMetric(coldTime.Seconds(), "cold-s")
	if rawTime >= 0 {
		b.ReportMetric(rawTime, "sha256sum-s")
	}
}

// writeFolder writes n files of size bytes of random data into dir, a
// hundred to a sub-folder, dated past the racy window.
func writeFolder(b *testing.B, dir string, n int, size int64) {
	b.Helper()
	buf := make([]byte, size)
	old := time.Now().Add(-time.Hour)
	for i := range n {
		sub := filepath.Join(dir, fmt.Sprintf("d%03d", i/100))
		require.NoError(b, os.MkdirAll(sub, 0o755))
		_, _ = rand.Read(buf)
		p := filepath.Join(sub, fmt.Sprintf("f%05d.bin", i))
		require.NoError(b, os.WriteFile(p, buf, 0o644))
		require.NoError(b, os.Chtimes(p, old, old))
	}
}
