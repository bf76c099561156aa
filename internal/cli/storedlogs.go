package cli

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/porch-pipelines/porch/compiler/plan"
)

// Where a step's log is inside its artifacts folder, by step kind (the
// files logLocator.find names).
var storedLogNames = []string{
	filepath.Join("user_logs", "std_log.txt"),
	filepath.Join("logs", "sys", "job_report", "processed_mini-batches.csv"),
}

// storedLog is one step's log found in a datastore folder.
type storedLog struct {
	step string
	file string
}

// datastoreRoots are the local folders a run's artifacts may be in: every
// datastore under the home's datastores/ folder, then the local
// datastores a server registered (stores; nil without a server).
func datastoreRoots(home string, stores []plan.Datastore) []string {
	var roots []string
	dir := filepath.Join(home, "datastores")
	if entries, err := os.ReadDir(dir); err == nil {
		for _, e := range entries {
			if e.IsDir() {
				roots = append(roots, filepath.Join(dir, e.Name()))
			}
		}
	}
	for _, d := range stores {
		if d.Type != "s3" && d.Path != "" && !slices.Contains(roots, d.Path) {
			roots = append(roots, d.Path)
		}
	}
	return roots
}

// findStoredLogs lists the step logs of runID in the first datastore
// folder that holds the run (azureml/<run>/ in it), sorted by step path.
// It returns the folders it looked in when none holds the run.
func findStoredLogs(roots []string, runID string) ([]storedLog, []string) {
	var looked []string
	for _, root := range roots {
		dir := filepath.Join(root, "azureml", runID)
		looked = append(looked, dir)
		if runID == "." || runID == ".." || strings.ContainsAny(runID, `/\`) {
			continue
		}
		if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
			continue
		}
		return walkStoredLogs(dir), nil
	}
	return nil, looked
}

// walkStoredLogs finds <step>/artifacts/<log> under a run's folder; a
// step path may have several parts (nested pipelines, sweep trials).
func walkStoredLogs(dir string) []storedLog {
	var out []storedLog
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() || d.Name() != "artifacts" {
			return nil
		}
		step, err := filepath.Rel(dir, filepath.Dir(p))
		if err != nil || step == "." {
			return nil
		}
		for _, name := range storedLogNames {
			if fi, err := os.Stat(filepath.Join(p, name)); err == nil && fi.Mode().IsRegular() {
				out = append(out, storedLog{step: filepath.ToSlash(step), file: filepath.Join(p, name)})
				break
			}
		}
		return filepath.SkipDir
	})
	sort.Slice(out, func(i, j int) bool { return out[i].step < out[j].step })
	return out
}

// stepMatches says whether the step at path is the one `porch job logs RUN
// STEP` names: its full path, its last parts, or a sweep's trials.
func stepMatches(path, step string) bool {
	return step == "" || path == step || strings.HasSuffix(path, "/"+step) || strings.HasPrefix(path, step+"/trial-")
}

// printStoredLogs prints the logs of a run no server knows from the
// datastore folders under roots: every step's, or step's. An ended run has
// nothing more to follow, so --follow changes nothing.
func (a *app) printStoredLogs(roots []string, runID, step, why string) error {
	logs, looked := findStoredLogs(roots, runID)
	if looked != nil {
		if len(looked) == 0 {
			return fmt.Errorf("%s, and there is no datastore folder to look in", why)
		}
		return fmt.Errorf("%s, nor is it in a datastore: porch looked for its logs in %s", why, strings.Join(looked, ", "))
	}
	var picked []storedLog
	var names []string
	for _, l := range logs {
		names = append(names, l.step)
		if stepMatches(l.step, step) {
			picked = append(picked, l)
		}
	}
	if len(picked) == 0 {
		if len(names) == 0 {
			return fmt.Errorf("run %s has no step logs in its datastore folder", runID)
		}
		return fmt.Errorf("run %s has no step %q with a log: steps with logs are %s", runID, step, strings.Join(names, ", "))
	}
	for _, l := range picked {
		data, err := os.ReadFile(l.file)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			fmt.Fprintf(a.stderr, "porch: cannot read the log of step %s: %v\n", l.step, err)
			continue
		}
		if len(picked) > 1 && len(data) > 0 {
			fmt.Fprintf(a.stdout, "==> %s (%s) <==\n", l.step, l.file)
		}
		a.stdout.Write(data)
	}
	return nil
}
