package monitor

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
)

// FileName is the name of the CSV file a Recorder writes in its folder.
const FileName = "node_resource_usage.csv"

// Columns are the CSV columns a Recorder writes, in order; doc.go says what
// each holds. They are the JSON names of Sample's fields.
var Columns = []string{
	"time", "cpu_percent", "mem_used_bytes", "mem_total_bytes", "mem_percent",
	"disk_read_bytes_per_sec", "disk_write_bytes_per_sec",
	"net_sent_bytes_per_sec", "net_recv_bytes_per_sec",
	"processes", "tree_cpu_percent", "tree_rss_bytes",
}

// TimeFormat is the layout of the time column: RFC 3339 in UTC with
// milliseconds.
const TimeFormat = "2006-01-02T15:04:05.000Z07:00"

// Recorder appends Samples to FileName in a folder, one CSV row each, written
// through at once so the file can be read while it grows and survives a
// crash. It is safe for concurrent use.
type Recorder struct {
	path string

	mu  sync.Mutex
	f   *os.File
	buf []byte
}

// NewRecorder opens dir/FileName for appending, creating dir and the file as
// needed, and writes the header line when the file is new or empty. A file
// left by an earlier Recorder (a monitor restarted after a worker crash) is
// continued: its header must match Columns, and a last line cut short is
// ended first so the next row starts on a line of its own.
func NewRecorder(dir string) (*Recorder, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("create resource usage folder: %w", err)
	}
	path := filepath.Join(dir, FileName)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open resource usage file: %w", err)
	}
	if err := prepare(f, path); err != nil {
		f.Close()
		return nil, err
	}
	return &Recorder{path: path, f: f}, nil
}

// prepare writes the header to an empty file, or checks the header of a
// non-empty one and ends its last line.
func prepare(f *os.File, path string) error {
	info, err := f.Stat()
	if err != nil {
		return fmt.Errorf("inspect resource usage file: %w", err)
	}
	header := strings.Join(Columns, ",") + "\n"
	if info.Size() == 0 {
		if _, err := f.WriteString(header); err != nil {
			return fmt.Errorf("write header of %s: %w", path, err)
		}
		return nil
	}
	first := make([]byte, len(header))
	n, err := f.ReadAt(first, 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("read header of %s: %w", path, err)
	}
	if string(first[:n]) != header {
		return fmt.Errorf("%s: the first line is not the header porch writes (%s); "+
			"move the file away or delete it so porch can start a new one",
			path, strings.TrimSuffix(header, "\n"))
	}
	last := make([]byte, 1)
	if _, err := f.ReadAt(last, info.Size()-1); err != nil {
		return fmt.Errorf("read end of %s: %w", path, err)
	}
	if last[0] != '\n' {
		if _, err := f.WriteString("\n"); err != nil {
			return fmt.Errorf("end last line of %s: %w", path, err)
		}
	}
	return nil
}

// Path returns the file the Recorder writes.
func (r *Recorder) Path() string { return r.path }

// Write appends one row for s.
func (r *Recorder) Write(s Sample) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.f == nil {
		return fmt.Errorf("write to %s: the recorder is closed", r.path)
	}
	r.buf = appendRow(r.buf[:0], s)
	// One write per row: with O_APPEND a row is never interleaved with
	// another writer's.
	if _, err := r.f.Write(r.buf); err != nil {
		return fmt.Errorf("write resource usage: %w", err)
	}
	return nil
}

// appendRow appends s as one CSV line in Columns order. No field can hold a
// comma or a quote, so none needs quoting.
func appendRow(b []byte, s Sample) []byte {
	b = s.Time.UTC().AppendFormat(b, TimeFormat)
	b = appendFloat(b, s.CPUPercent, 2)
	b = appendUint(b, s.MemUsedBytes)
	b = appendUint(b, s.MemTotalBytes)
	b = appendFloat(b, s.MemPercent, 2)
	b = appendFloat(b, s.DiskReadBytesPerSec, 0)
	b = appendFloat(b, s.DiskWriteBytesPerSec, 0)
	b = appendFloat(b, s.NetSentBytesPerSec, 0)
	b = appendFloat(b, s.NetRecvBytesPerSec, 0)
	b = appendUint(b, uint64(max(s.Processes, 0)))
	b = appendFloat(b, s.TreeCPUPercent, 2)
	b = appendUint(b, s.TreeRSSBytes)
	return append(b, '\n')
}

func appendFloat(b []byte, v float64, prec int) []byte {
	return strconv.AppendFloat(append(b, ','), v, 'f', prec, 64)
}

func appendUint(b []byte, v uint64) []byte {
	return strconv.AppendUint(append(b, ','), v, 10)
}

// Close closes the file. Writes after Close fail; a second Close does
// nothing.
func (r *Recorder) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.f == nil {
		return nil
	}
	err := r.f.Close()
	r.f = nil
	if err != nil {
		return fmt.Errorf("close %s: %w", r.path, err)
	}
	return nil
}
