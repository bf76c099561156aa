package metrics

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// BenchmarkRead reads a 10,000-line metrics file in 1 MiB windows, as a
// sweep polling a trial would; it reports the cost per line.
func BenchmarkRead(b *testing.B) {
	path := filepath.Join(b.TempDir(), FileName)
	var sb strings.Builder
	for i := range 10000 {
		fmt.Fprintf(&sb, `{"kind": "metric", "key": "loss", "value": %g, "step": %d, "time": 1700000000.123456}`+"\n", 1/float64(i+1), i)
	}
	if err := os.WriteFile(path, []byte(sb.String()), 0o644); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(sb.Len()))
	for b.Loop() {
		r := &Reader{Path: path}
		n := 0
		for {
			recs, err := r.Next(0)
			if err != nil {
				b.Fatal(err)
			}
			if len(recs) == 0 {
				break
			}
			n += len(recs)
		}
		if n != 10000 {
			b.Fatalf("read %d records, want 10000", n)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*10000), "ns/line")
}

// BenchmarkReadNothingNew is one poll of a file with nothing new since the
// last read: the common case while a trial trains.
func BenchmarkReadNothingNew(b *testing.B) {
	path := filepath.Join(b.TempDir(), FileName)
	line := `{"kind": "metric", "key": "loss", "value": 0.5, "step": 1, "time": 1700000000.1}` + "\n"
	if err := os.WriteFile(path, []byte(strings.Repeat(line, 1000)), 0o644); err != nil {
		b.Fatal(err)
	}
	off := int64(len(line) * 1000)
	for b.Loop() {
		if _, _, err := Read(path, off, 0); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkExtend is the cost a command step pays once the worker knows
// whether its Python has mlflow and the module is written.
func BenchmarkExtend(b *testing.B) {
	cache := filepath.Join(b.TempDir(), "cache")
	env := os.Environ()
	python := filepath.Join(b.TempDir(), "no-python")
	if _, err := Extend(env, python, "/m.jsonl", cache); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := Extend(env, python, "/m.jsonl", cache); err != nil {
			b.Fatal(err)
		}
	}
}
