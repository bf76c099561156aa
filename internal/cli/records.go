package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/porch-pipelines/porch/activities/runrecord"
	"github.com/porch-pipelines/porch/compiler/plan"
	"github.com/porch-pipelines/porch/workflows"
)

// recordStore is one datastore whose runs' records porch reads: a folder
// on this host, or an object store.
type recordStore struct {
	// name names the store in messages: a folder, or an s3 datastore's
	// URI.
	name string
	// fsys is the datastore's root.
	fsys fs.FS
	// local is the folder on this host, "" for an object store.
	local string
}

// recordStores are the datastores runs' records are read from: every
// datastore folder under the home, the local datastores a server
// registered (stores; nil without a server), then its s3 datastores,
// opened with this user's credentials (sess; nil without a server).
func recordStores(ctx context.Context, home string, stores []plan.Datastore, sess *session) []recordStore {
	var out []recordStore
	for _, root := range datastoreRoots(home, stores) {
		out = append(out, recordStore{name: root, fsys: os.DirFS(root), local: root})
	}
	for _, d := range stores {
		if d.Type != plan.DatastoreS3 || sess == nil {
			continue
		}
		if st, err := sess.objectStore(d); err == nil {
			out = append(out, recordStore{name: plan.DatastoreURI(d.Name, ""), fsys: st.FS(ctx)})
		}
	}
	return out
}

// recordedRun is a run as its records tell it: the run's record, and
// its steps with each nested pipeline's steps after its row.
type recordedRun struct {
	workflows.RunRecord
	steps []workflows.StepState
	// where names the record's file.
	where string
	store recordStore
}

// recordPath is where the record of runID's pipeline prefix is inside its
// datastore.
func recordPath(runID, prefix string) string {
	_, p, _ := plan.SplitDatastoreURI(runrecord.URI("x", runID, prefix))
	return p
}

// findRecord reads the record of runID from the first store that holds
// one. It returns an error satisfying errors.Is(err, fs.ErrNotExist),
// naming where it looked, when none does.
func findRecord(stores []recordStore, runID string) (*recordedRun, error) {
	var looked []string
	if runID == "." || runID == ".." || strings.ContainsAny(runID, `/\`) {
		return nil, fmt.Errorf("%q is not a run id: %w", runID, fs.ErrNotExist)
	}
	for _, st := range stores {
		rel := recordPath(runID, "")
		rec, err := readRecord(st, rel)
		if errors.Is(err, fs.ErrNotExist) {
			looked = append(looked, st.where(path.Dir(rel)))
			continue
		}
		if err != nil {
			return nil, err
		}
		run := &recordedRun{RunRecord: *rec, where: st.where(rel), store: st}
		run.steps = nestedSteps(st, runID, rec.Steps)
		return run, nil
	}
	return nil, fmt.Errorf("no record of run %s in %s: %w", runID, strings.Join(looked, ", "), fs.ErrNotExist)
}

// where names a file of the store for a user.
func (st recordStore) where(rel string) string {
	if st.local != "" {
		return filepath.Join(st.local, filepath.FromSlash(rel))
	}
	return st.name + rel
}

// readRecord reads and decodes one record.
func readRecord(st recordStore, rel string) (*workflows.RunRecord, error) {
	data, err := fs.ReadFile(st.fsys, rel)
	if err != nil {
		return nil, err
	}
	var rec workflows.RunRecord
	if err := json.Unmarshal(data, &rec); err != nil {
		return nil, fmt.Errorf("the run record %s is not one porch can read: %v", st.where(rel), err)
	}
	if rec.Version > workflows.RunRecordVersion {
		return nil, fmt.Errorf("the run record %s has format %d, newer than this porch reads (%d): upgrade porch",
			st.where(rel), rec.Version, workflows.RunRecordVersion)
	}
	return &rec, nil
}

// nestedSteps puts each nested pipeline's recorded steps after its row,
// as porch job show lists a running run's. A nested pipeline without a
// record (it never started, or its worker could not write it) shows its
// row alone.
func nestedSteps(st recordStore, runID string, steps []workflows.StepState) []workflows.StepState {
	out := make([]workflows.StepState, 0, len(steps))
	for _, s := range steps {
		out = append(out, s)
		if s.Type != plan.StepPipeline || s.Status == workflows.StatusWaiting || s.Status == workflows.StatusSkipped ||
			s.Status == workflows.StatusReused {
			continue
		}
		if rec, err := readRecord(st, recordPath(runID, s.Path)); err == nil {
			out = append(out, nestedSteps(st, runID, rec.Steps)...)
		}
	}
	return out
}

// listRecords reads the records of at most limit runs of each local
// store, those whose folders changed last (a run's folder changes as it
// ends, when its record is written), at most one per run id (the first
// store's).
func listRecords(stores []recordStore, limit int) []*recordedRun {
	var out []*recordedRun
	seen := map[string]bool{}
	for _, st := range stores {
		if st.local == "" {
			// Listing an object store's runs is a request per run.
			continue
		}
		found := 0
		for _, name := range newestFolders(filepath.Join(st.local, "azureml")) {
			if found == limit {
				break
			}
			if seen[name] {
				continue
			}
			rel := recordPath(name, "")
			rec, err := readRecord(st, rel)
			if err != nil || rec.Run != name {
				continue
			}
			seen[name] = true
			found++
			out = append(out, &recordedRun{RunRecord: *rec, where: st.where(rel), store: st})
		}
	}
	return out
}

// newestFolders lists the folders in dir, the last changed first.
func newestFolders(dir string) []string {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	type folder struct {
		name string
		mod  time.Time
	}
	var folders []folder
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		if info, err := e.Info(); err == nil {
			folders = append(folders, folder{e.Name(), info.ModTime()})
		}
	}
	slices.SortFunc(folders, func(a, b folder) int { return b.mod.Compare(a.mod) })
	names := make([]string, len(folders))
	for i, f := range folders {
		names[i] = f.name
	}
	return names
}
