package history

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// entry is one execution in a document.
type entry struct {
	WorkflowID   string          `json:"workflow_id"`
	RunID        string          `json:"run_id"`
	WorkflowType string          `json:"workflow_type"`
	History      json.RawMessage `json:"history"`
}

// DocumentWriter writes a run's executions as one JSON document, one
// execution at a time, so that a run's histories never need to be in
// memory together.
type DocumentWriter struct {
	w   io.Writer
	n   int
	err error
}

// NewDocumentWriter starts the document of run on w.
func NewDocumentWriter(w io.Writer, run string) *DocumentWriter {
	d := &DocumentWriter{w: w}
	id, err := json.Marshal(run)
	if err != nil {
		d.err = err
		return d
	}
	_, d.err = fmt.Fprintf(w, "{\n  \"run\": %s,\n  \"workflows\": [", id)
	return d
}

// Add writes one execution.
func (d *DocumentWriter) Add(e Execution) error {
	if d.err != nil {
		return d.err
	}
	h, err := marshal(e.History)
	if err != nil {
		d.err = fmt.Errorf("encode the history of %s: %v", e.WorkflowID, err)
		return d.err
	}
	b, err := json.MarshalIndent(entry{e.WorkflowID, e.RunID, e.WorkflowType, h}, "    ", "  ")
	if err != nil {
		d.err = fmt.Errorf("encode the history of %s: %v", e.WorkflowID, err)
		return d.err
	}
	sep := ",\n    "
	if d.n == 0 {
		sep = "\n    "
	}
	d.n++
	_, d.err = fmt.Fprintf(d.w, "%s%s", sep, b)
	return d.err
}

// Close ends the document. It does not close the underlying writer.
func (d *DocumentWriter) Close() error {
	if d.err != nil {
		return d.err
	}
	end := "\n  ]\n}\n"
	if d.n == 0 {
		end = "]\n}\n"
	}
	_, d.err = io.WriteString(d.w, end)
	return d.err
}

// WriteFile writes e's history to dir/FileName(e.WorkflowID, n), exactly
// as `temporal workflow show --output json` does, and returns that path.
// The file appears whole or not at all.
func WriteFile(dir string, e Execution, n int) (string, error) {
	name := filepath.Join(dir, filepath.FromSlash(FileName(e.WorkflowID, n)))
	data, err := marshal(e.History)
	if err != nil {
		return "", fmt.Errorf("encode the history of %s: %v", e.WorkflowID, err)
	}
	if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
		return "", err
	}
	tmp, err := os.CreateTemp(filepath.Dir(name), ".porch-tmp-*")
	if err != nil {
		return "", err
	}
	// CreateTemp makes the file private; a history is as readable as
	// any file the user writes.
	err = tmp.Chmod(0o644)
	if err == nil {
		_, err = tmp.Write(append(data, '\n'))
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), name)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return "", err
	}
	return name, nil
}
