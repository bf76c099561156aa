package parallel

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/porch-pipelines/porch/activities/atomicfile"
	"github.com/porch-pipelines/porch/activities/minibatch"
	"github.com/porch-pipelines/porch/activities/stepio"
)

// parallelFolders are one parallel step's folders. The logs follow Azure's
// layout of a parallel job; porch's own state sits beside them. The
// workers share them through share: the folder itself on a local
// datastore, the object store on an s3 one.
//
//	A/logs/                       job_result.txt, job_progress_overview.*.txt, sys/, user/
//	A/porch/spec.json             the step as the workflow resolved it, and its plan
//	A/porch/manifest/             the mini-batches
//	A/porch/done/<k>/<i>.json     mini-batch i succeeded (k = i/1000), run on its own
//	A/porch/done/groups/*.jsonl   mini-batches a group ran succeeded (see done.go)
//	A/porch/results/<k>/<i>.out   what run() returned for mini-batch i (append_row_to)
type parallelFolders struct {
	artifactsURI string
	artifacts    string
	logs         string
	state        string
	share        stepShare
}

// Paths relative to the artifacts folder.
const (
	specRel     = "porch/spec.json"
	manifestRel = "porch/manifest/" + minibatch.ManifestName
	doneRel     = "porch/done"
	resultsRel  = "porch/results"
)

func (a *Activities) parallelFolders(ref ParallelStepRef) (parallelFolders, error) {
	if err := stepio.CheckName("run id", ref.RunID); err != nil {
		return parallelFolders{}, err
	}
	if err := stepio.CheckName("step path", ref.StepPath); err != nil {
		return parallelFolders{}, err
	}
	f, err := a.artifactsFolder(stepio.StepArtifactsURI(ref.Datastore, ref.RunID, ref.StepPath))
	if err != nil {
		return f, stepio.Invalid("step %q: %v", ref.StepPath, err)
	}
	return f, nil
}

// artifactsFolder is a step's artifacts folder on this worker and how the
// workers share it.
func (a *Activities) artifactsFolder(uri string) (parallelFolders, error) {
	f := parallelFolders{artifactsURI: uri}
	dir, err := a.ArtifactsPath(uri)
	if err != nil {
		return f, err
	}
	f.artifacts = dir
	f.logs = filepath.Join(dir, "logs")
	f.state = filepath.Join(dir, "porch")
	f.share = localShare{dir: dir}
	if d, rest, ok := a.ObjectLocation(uri); ok {
		s, err := a.ObjectStore(d)
		if err != nil {
			return f, stepio.StoreError(fmt.Sprintf("open datastore %q", d.Name), err)
		}
		f.share = objectShare{dir: dir, store: s, ds: d.Name, prefix: strings.Trim(path.Clean("/"+rest), "/")}
	}
	return f, nil
}

func (f parallelFolders) manifest() string { return filepath.Join(f.state, "manifest") }
func (f parallelFolders) spec() string     { return filepath.Join(f.state, "spec.json") }

// local is the local path of a path relative to the artifacts folder.
func (f parallelFolders) local(rel string) string {
	return filepath.Join(f.artifacts, filepath.FromSlash(rel))
}

func shard(root string, i int, ext string) string {
	return root + "/" + strconv.Itoa(i/1000) + "/" + strconv.Itoa(i) + ext
}

func doneOf(i int) string   { return shard(doneRel, i, ".json") }
func resultOf(i int) string { return shard(resultsRel, i, ".out") }

func (f parallelFolders) done(i int) string   { return f.local(doneOf(i)) }
func (f parallelFolders) result(i int) string { return f.local(resultOf(i)) }

// processedCSV is Azure's per-attempt report of mini-batches.
func (f parallelFolders) processedCSV() string { return f.local(processedReport) }

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

// readSpec reads the step's spec.json: this worker's copy when it is the
// one for digest, else the shared one.
func (f parallelFolders) readSpec(ctx context.Context, step, digest string) (parallelSpec, error) {
	var s parallelSpec
	if err := readJSONFile(f.spec(), &s); err == nil && digest != "" && s.Plan.Ref.Digest == digest {
		return s, nil
	}
	if _, err := f.share.fetch(ctx, specRel); err != nil {
		return s, fmt.Errorf("step %q: fetch spec.json: %w", step, err)
	}
	s = parallelSpec{}
	err := readJSONFile(f.spec(), &s)
	if errors.Is(err, fs.ErrNotExist) {
		return s, stepio.Invalid("step %q: %s is missing: the step was not planned on a worker that shares this porch home or the step's datastore; mini-batches must run where the planner's files are", step, f.spec())
	}
	if err != nil {
		return s, fmt.Errorf("step %q: read %s: %w", step, f.spec(), err)
	}
	return s, nil
}

// doneRecord returns mini-batch i's result when an attempt already
// processed it.
func (f parallelFolders) doneRecord(ctx context.Context, i int) (MiniBatchResult, bool, error) {
	var r MiniBatchResult
	if err := readJSONFile(f.done(i), &r); err == nil {
		return r, true, nil
	}
	ok, err := f.share.fetch(ctx, doneOf(i))
	if err != nil || !ok {
		return r, false, err
	}
	if err := readJSONFile(f.done(i), &r); err != nil {
		return r, false, err
	}
	return r, true, nil
}
