package history

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/porch-pipelines/porch/internal/userfile"
)

// MaxFileBytes bounds one file porch reads histories from: 1 GiB. (A
// Temporal server refuses a history above 50 MiB by default; a document
// holds all of a run's.)
const MaxFileBytes int64 = 1 << 30

// Loaded is an execution read from a file, with what names it.
type Loaded struct {
	Execution
	// File is the file it came from.
	File string
	// Name names the workflow in messages: in a document, its id, with
	// "@n" for the n-th run of that id in the document; for a history file,
	// the name of the file relative to the folder given (as FileName writes
	// it, decoded), without ".json".
	Name string
}

// Files lists the history files path names: path itself when it is not a
// folder, else the .json files in the folder and its subfolders, in
// lexical order, skipping hidden files and folders.
func Files(path string) ([]string, error) {
	info, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%s: no such file or folder", path)
	}
	if err != nil {
		return nil, err
	}
	if !info.IsDir() {
		return []string{path}, nil
	}
	var files []string
	err = filepath.WalkDir(path, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p != path && strings.HasPrefix(d.Name(), ".") {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.IsDir() && strings.HasSuffix(d.Name(), ".json") {
			files = append(files, p)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("%s holds no .json history files", path)
	}
	slices.Sort(files)
	return files, nil
}

// probe tells the two forms apart by their top-level keys.
type probe struct {
	Events    json.RawMessage `json:"events"`
	Run       *string         `json:"run"`
	Workflows []entry         `json:"workflows"`
}

// formHint says what porch reads, for errors about files it cannot.
const formHint = "expected what `porch job history` or `temporal workflow show --output json` writes"

// ReadFile reads the executions in file, a document or a single history,
// told apart by their top-level keys ("workflows" or "events"). rel is the
// file's name relative to the folder it was found in (its base name when
// it was named itself), which names a single history's workflow.
func ReadFile(ctx context.Context, file, rel string) ([]Loaded, error) {
	data, err := userfile.Read(ctx, file, MaxFileBytes)
	if err != nil {
		return nil, err
	}
	var p probe
	if err := json.Unmarshal(data, &p); err != nil {
		var se *json.SyntaxError
		var te *json.UnmarshalTypeError
		switch {
		case errors.As(err, &se):
			return nil, fmt.Errorf("%s is not a Temporal history: it is not JSON (byte %d: %v): %s", file, se.Offset, se, formHint)
		case errors.As(err, &te) && te.Field == "":
			return nil, fmt.Errorf("%s is not a Temporal history: it holds a JSON %s, not an object: %s", file, te.Value, formHint)
		}
		return nil, fmt.Errorf("%s is not a Temporal history: %v: %s", file, err, formHint)
	}
	switch {
	case p.Workflows != nil || p.Run != nil:
		return readDocument(file, p.Workflows)
	case p.Events != nil:
		h, err := unmarshal(data)
		if err != nil {
			return nil, fmt.Errorf("%s is not a Temporal history: %v", file, err)
		}
		name := strings.TrimSuffix(filepath.ToSlash(rel), ".json")
		if id, n, ok := ParseFileName(filepath.ToSlash(rel)); ok {
			name = runName(id, n)
		}
		l := Loaded{Execution: Execution{History: h}, File: file, Name: name}
		if len(h.GetEvents()) > 0 {
			l.WorkflowType = workflowType(h)
		}
		return []Loaded{l}, nil
	}
	return nil, fmt.Errorf("%s is not a Temporal history: it has neither \"events\" nor \"workflows\": %s", file, formHint)
}

// readDocument decodes a document's histories.
func readDocument(file string, entries []entry) ([]Loaded, error) {
	if len(entries) == 0 {
		return nil, fmt.Errorf("%s holds no workflows", file)
	}
	runs := map[string]int{}
	out := make([]Loaded, 0, len(entries))
	for i, e := range entries {
		if e.WorkflowID == "" {
			return nil, fmt.Errorf("%s: workflow %d of the document has no workflow_id", file, i+1)
		}
		if len(e.History) == 0 || string(e.History) == "null" {
			return nil, fmt.Errorf("%s: workflow %s has no history", file, e.WorkflowID)
		}
		h, err := unmarshal(e.History)
		if err != nil {
			return nil, fmt.Errorf("%s: the history of workflow %s is not a Temporal history: %v", file, e.WorkflowID, err)
		}
		if e.WorkflowType == "" && len(h.GetEvents()) > 0 {
			e.WorkflowType = workflowType(h)
		}
		runs[e.WorkflowID]++
		out = append(out, Loaded{
			Execution: Execution{WorkflowID: e.WorkflowID, RunID: e.RunID, WorkflowType: e.WorkflowType, History: h},
			File:      file,
			Name:      runName(e.WorkflowID, runs[e.WorkflowID]),
		})
	}
	return out, nil
}

// runName is id for a workflow's first run, id@n for its n-th.
func runName(id string, n int) string {
	if n > 1 {
		return id + "@" + strconv.Itoa(n)
	}
	return id
}
