package monitor

import (
	"encoding/csv"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func readCSV(t *testing.T, path string) [][]string {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	require.NoError(t, err)
	return rows
}

func sampleAt(sec int, processes int) Sample {
	return Sample{
		Time:                 time.Date(2026, 3, 1, 12, 0, sec, 250e6, time.FixedZone("CET", 3600)),
		CPUPercent:           12.346,
		MemUsedBytes:         3 << 30,
		MemTotalBytes:        8 << 30,
		MemPercent:           37.5,
		DiskReadBytesPerSec:  1024.4,
		DiskWriteBytesPerSec: 2048.6,
		NetSentBytesPerSec:   10,
		NetRecvBytesPerSec:   20,
		Processes:            processes,
		TreeCPUPercent:       150.5,
		TreeRSSBytes:         64 << 20,
	}
}

func TestRecorderWritesTheHeaderOnceAcrossRestarts(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "logs", "sys", "perf", "node-0")
	r1, err := NewRecorder(dir)
	require.NoError(t, err)
	require.NoError(t, r1.Write(sampleAt(1, 3)))
	require.NoError(t, r1.Close())

	// A monitor restarted after a crash continues the same file.
	r2, err := NewRecorder(dir)
	require.NoError(t, err)
	require.NoError(t, r2.Write(sampleAt(2, 4)))
	require.NoError(t, r2.Close())

	rows := readCSV(t, filepath.Join(dir, FileName))
	require.Len(t, rows, 3)
	assert.Equal(t, Columns, rows[0])
	assert.Equal(t, []string{
		"2026-03-01T11:00:01.250Z", "12.35", "3221225472", "8589934592", "37.50",
		"1024", "2049", "10", "20", "3", "150.50", "67108864",
	}, rows[1])
	assert.Equal(t, "2026-03-01T11:00:02.250Z", rows[2][0])
	assert.Equal(t, "4", rows[2][9])
}

func TestRecorderOnAnEmptyFileWritesTheHeader(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, FileName), nil, 0o644))
	r, err := NewRecorder(dir)
	require.NoError(t, err)
	require.NoError(t, r.Write(sampleAt(1, 1)))
	require.NoError(t, r.Close())
	rows := readCSV(t, filepath.Join(dir, FileName))
	require.Len(t, rows, 2)
	assert.Equal(t, Columns, rows[0])
}

func TestRecorderEndsALineCutShort(t *testing.T) {
	dir := t.TempDir()
	r, err := NewRecorder(dir)
	require.NoError(t, err)
	require.NoError(t, r.Write(sampleAt(1, 1)))
	require.NoError(t, r.Close())
	// A crash in the middle of a write leaves part of a row.
	path := filepath.Join(dir, FileName)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	require.NoError(t, err)
	_, err = f.WriteString("2026-03-01T11:00:02.250Z,5")
	require.NoError(t, err)
	require.NoError(t, f.Close())

	r, err = NewRecorder(dir)
	require.NoError(t, err)
	require.NoError(t, r.Write(sampleAt(3, 7)))
	require.NoError(t, r.Close())
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	require.Len(t, lines, 4)
	assert.Equal(t, "2026-03-01T11:00:02.250Z,5", lines[2])
	assert.Equal(t, "2026-03-01T11:00:03.250Z", lines[3][:24])
}

func TestRecorderRefusesAFileWithAnotherHeader(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, FileName)
	require.NoError(t, os.WriteFile(path, []byte("time,cpu\n1,2\n"), 0o644))
	_, err := NewRecorder(dir)
	require.Error(t, err)
	assert.ErrorContains(t, err, path)
	assert.ErrorContains(t, err, "move the file away or delete it")
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, "time,cpu\n1,2\n", string(data), "the file is left as it was")
}

func TestRecorderErrors(t *testing.T) {
	parent := t.TempDir()
	blocker := filepath.Join(parent, "file")
	require.NoError(t, os.WriteFile(blocker, []byte("x"), 0o644))
	_, err := NewRecorder(filepath.Join(blocker, "node-0"))
	assert.ErrorContains(t, err, blocker)

	r, err := NewRecorder(parent)
	require.NoError(t, err)
	require.NoError(t, r.Close())
	require.NoError(t, r.Close(), "a second Close does nothing")
	err = r.Write(sampleAt(1, 1))
	assert.ErrorContains(t, err, "closed")
	assert.ErrorContains(t, err, r.Path())
}

func TestRecorderRowsRoundTripASampler(t *testing.T) {
	dir := t.TempDir()
	r, err := NewRecorder(dir)
	require.NoError(t, err)
	s := NewSampler(nil)
	for range 3 {
		got, err := s.Sample()
		require.NoError(t, err)
		require.NoError(t, r.Write(got))
	}
	require.NoError(t, r.Close())
	rows := readCSV(t, filepath.Join(dir, FileName))
	require.Len(t, rows, 4)
	for _, row := range rows[1:] {
		_, err := time.Parse(TimeFormat, row[0])
		require.NoError(t, err)
		total, err := strconv.ParseUint(row[3], 10, 64)
		require.NoError(t, err)
		assert.Positive(t, total)
	}
}
