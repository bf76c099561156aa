package activities

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"

	"github.com/porch-pipelines/porch/internal/atomicfile"
)

// parallelFolders are one parallel step's folders. The logs follow Azure's
// layout of a parallel job; porch's own state sits beside them.
//
//	A/logs/                       job_result.txt, job_progress_overview.*.txt, sys/, user/
//	A/porch/spec.json             the step as the workflow resolved it, and its plan
//	A/porch/manifest/             the mini-batches
//	A/porch/done/<k>/<i>.json     mini-batch i succeeded (k = i/1000)
//	A/porch/results/<k>/<i>.out   what run() returned for mini-batch i (append_row_to)
type parallelFolders struct {
	artifactsURI string
	artifacts    string
	logs         string
	state        string
}

func (a *Activities) parallelFolders(ref ParallelStepRef) (parallelFolders, error) {
	if err := checkName("run id", ref.RunID); err != nil {
		return parallelFolders{}, err
	}
	if err := checkName("step path", ref.StepPath); err != nil {
		return parallelFolders{}, err
	}
	var f parallelFolders
	f.artifactsURI = StepArtifactsURI(ref.Datastore, ref.RunID, ref.StepPath)
	dir, err := a.artifactsPath(f.artifactsURI)
	if err != nil {
		return f, invalidStep("step %q: %v", ref.StepPath, err)
	}
	f.artifacts = dir
	f.logs = filepath.Join(dir, "logs")
	f.state = filepath.Join(dir, "porch")
	return f, nil
}

func (f parallelFolders) manifest() string { return filepath.Join(f.state, "manifest") }
func (f parallelFolders) spec() string     { return filepath.Join(f.state, "spec.json") }

func shard(root string, i int, ext string) string {
	return filepath.Join(root, strconv.Itoa(i/1000), strconv.Itoa(i)+ext)
}

func (f parallelFolders) done(i int) string { return shard(filepath.Join(f.state, "done"), i, ".json") }
func (f parallelFolders) result(i int) string {
	return shard(filepath.Join(f.state, "results"), i, ".out")
}

// processedCSV is Azure's per-attempt report of mini-batches.
func (f parallelFolders) processedCSV() string {
	return filepath.Join(f.logs, "sys", "job_report", "processed_mini-batches.csv")
}

// parallelSpec is what the planner leaves for the workers: the step's
// settings and the plan's counts.
type parallelSpec struct {
	Input PlanMiniBatchesInput `json:"input"`
	Plan  ParallelPlan         `json:"plan"`
}

// writeJSONFile writes v to path atomically: a reader sees the old file or
// the whole new one, never a part.
func writeJSONFile(path string, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return atomicfile.Write(path, data)
}

func readJSONFile(path string, v any) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	return json.Unmarshal(data, v)
}

// readSpec reads the step's spec.json.
func (f parallelFolders) readSpec(step string) (parallelSpec, error) {
	var s parallelSpec
	err := readJSONFile(f.spec(), &s)
	if errors.Is(err, fs.ErrNotExist) {
		return s, invalidStep("step %q: %s is missing: the step was not planned on a worker that shares this porch home; mini-batches must run where the planner's files are", step, f.spec())
	}
	if err != nil {
		return s, fmt.Errorf("step %q: read %s: %w", step, f.spec(), err)
	}
	return s, nil
}

// doneRecord returns mini-batch i's result when an attempt already
// processed it.
func (f parallelFolders) doneRecord(i int) (MiniBatchResult, bool) {
	var r MiniBatchResult
	if err := readJSONFile(f.done(i), &r); err != nil {
		return r, false
	}
	return r, true
}

// countDone counts the mini-batches with a done record.
func (f parallelFolders) countDone() (int, error) {
	n := 0
	err := filepath.WalkDir(filepath.Join(f.state, "done"), func(p string, d fs.DirEntry, err error) error {
		if errors.Is(err, fs.ErrNotExist) {
			return fs.SkipAll
		}
		if err != nil {
			return err
		}
		if !d.IsDir() && filepath.Ext(p) == ".json" {
			n++
		}
		return nil
	})
	return n, err
}
