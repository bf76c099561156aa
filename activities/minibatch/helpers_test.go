package minibatch

import (
	"bytes"
	"encoding/csv"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// writeTree writes files (slash paths relative to root) with their contents.
func writeTree(t testing.TB, root string, files map[string]string) {
	t.Helper()
	for rel, content := range files {
		p := filepath.Join(root, filepath.FromSlash(rel))
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
	}
}

// planAll plans in and reads every batch back through Open and Batch.
func planAll(t testing.TB, in Input) (Summary, []Batch) {
	t.Helper()
	dir := t.TempDir()
	sum, err := Plan(in, dir)
	require.NoError(t, err)
	m, err := Open(dir)
	require.NoError(t, err)
	defer m.Close()
	require.Equal(t, sum, m.Summary())
	require.Equal(t, sum.Batches, m.Len())
	batches := make([]Batch, m.Len())
	for i := range batches {
		batches[i], err = m.Batch(i)
		require.NoError(t, err)
		require.Equal(t, i, batches[i].Index)
	}
	return sum, batches
}

// planErr plans in and returns the *InputError it must fail with.
func planErr(t testing.TB, in Input) *InputError {
	t.Helper()
	_, err := Plan(in, t.TempDir())
	require.Error(t, err)
	var ie *InputError
	require.True(t, errors.As(err, &ie), "want an *InputError, got %T: %v", err, err)
	return ie
}

// readPart reads a part as the doc comment tells the Python driver to: the
// header bytes (when Header) and then Length bytes from Offset, parsed as CSV.
// It returns the data rows (the header row removed unless noHeader).
func readPart(t testing.TB, p Part, delim rune, noHeader bool) [][]string {
	t.Helper()
	var buf bytes.Buffer
	if p.Header {
		hp := p.HeaderPath
		if hp == "" {
			hp = p.Path
		}
		buf.Write(readRange(t, hp, 0, p.HeaderLength))
	}
	buf.Write(readRange(t, p.Path, p.Offset, p.Length))
	r := csv.NewReader(&buf)
	r.Comma = delim
	r.FieldsPerRecord = -1
	rows, err := r.ReadAll()
	require.NoError(t, err)
	if !noHeader && len(rows) > 0 {
		rows = rows[1:]
	}
	return rows
}

func readRange(t testing.TB, path string, off, n int64) []byte {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	b := make([]byte, n)
	_, err = f.ReadAt(b, off)
	if !errors.Is(err, io.EOF) {
		require.NoError(t, err)
	}
	return b
}

// csvRows parses a whole file's data rows (header removed).
func csvRows(t testing.TB, path string) [][]string {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	require.NoError(t, err)
	return rows[1:]
}

func fileSize(t testing.TB, path string) int64 {
	t.Helper()
	info, err := os.Stat(path)
	require.NoError(t, err)
	return info.Size()
}
