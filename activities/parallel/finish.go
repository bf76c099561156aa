package parallel

import (
	"bufio"
	"bytes"
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/porch-pipelines/porch/activities/stepio"
	"github.com/porch-pipelines/porch/compiler/plan"
)

// FinishParallel ends a parallel step: on success it writes append_row_to's
// file from the finished mini-batches' results, in mini-batch order; it
// writes job_result.txt and job_error.txt; and it stops this worker's
// entry-script processes for the step (calling shutdown()).
func (a *Activities) FinishParallel(ctx context.Context, in FinishParallelInput) (FinishParallelResult, error) {
	ref := in.Progress.Ref
	a.RefreshDatastores(ctx, ref.artifactsURI())
	f, err := a.parallelFolders(ref)
	if err != nil {
		return FinishParallelResult{}, err
	}
	// It heartbeats throughout, so that a worker lost in any phase (a
	// long append, say) is seen within the step's heartbeat timeout.
	var beat finishBeat
	stop := a.BeatWhile(ctx, beat.details)
	defer stop()
	beat.set("stopping entry scripts", 0)
	a.parallel().close(ctx, ref.RunID, ref.StepPath)
	spec, err := f.readSpec(ctx, ref.StepPath, ref.Digest)
	if err != nil {
		return FinishParallelResult{}, err
	}
	res := FinishParallelResult{LogDir: f.logs}
	cmd := stepio.Step{RunID: ref.RunID, StepPath: ref.StepPath, DefaultDatastore: ref.Datastore, Outputs: spec.Input.Outputs}
	b, err := a.Bind(ctx, cmd, stepio.Folders{ArtifactsURI: f.artifactsURI, Artifacts: f.artifacts})
	if err != nil {
		return res, err
	}
	res.Outputs = b.Outputs
	if in.Succeeded && spec.Input.Parallel.Task.AppendRowTo != "" {
		if err := a.appendRows(ctx, f, spec, b, &beat); err != nil {
			return res, err
		}
	}
	beat.set("writing logs", 0)
	if err := writeProgress(ctx, f, in.Progress); err != nil {
		return res, fmt.Errorf("step %q: write progress: %w", ref.StepPath, err)
	}
	if err := f.share.publishLogs(ctx, a.NodeName()); err != nil {
		return res, fmt.Errorf("step %q: publish logs: %w", ref.StepPath, err)
	}
	if err := writeResult(ctx, f, in); err != nil {
		return res, fmt.Errorf("step %q: write job_result.txt: %w", ref.StepPath, err)
	}
	if err := f.share.publishLogs(ctx, a.NodeName()); err != nil {
		return res, fmt.Errorf("step %q: publish logs: %w", ref.StepPath, err)
	}
	if in.Succeeded {
		beat.set("uploading outputs", 0)
		if err := a.commitParallelOutputs(ctx, ref.StepPath, spec.Input.Parallel.Task.AppendRowTo, b.Uploads); err != nil {
			return res, err
		}
	}
	if spec.Input.Parallel.CopyLogsToParent {
		beat.set("copying logs to the parent", 0)
		if err := a.copyLogsToParent(ctx, f, in); err != nil {
			return res, fmt.Errorf("step %q: copy logs to parent: %w", ref.StepPath, err)
		}
	}
	return res, nil
}

// commitParallelOutputs commits a succeeded parallel step's outputs on
// object storage: append_row_to's file is uploaded from here; the other
// outputs' files went up with each mini-batch, and only their commit
// marker is written now.
func (a *Activities) commitParallelOutputs(ctx context.Context, step, appendTo string, ups []stepio.Upload) error {
	for _, u := range ups {
		if u.Name == appendTo {
			if err := a.CommitUploads(ctx, step, []stepio.Upload{u}); err != nil {
				return err
			}
			continue
		}
		s, err := a.ObjectStore(u.Store)
		if err == nil {
			err = s.Commit(ctx, u.Path)
		}
		if err != nil {
			return stepio.StoreError(fmt.Sprintf("step %q: commit output %q on datastore %q", step, u.Name, u.Store.Name), err)
		}
	}
	return nil
}

// appendRows writes every finished mini-batch's results into the output
// append_row_to names: a DataFrame's CSV keeps only the first header. It
// writes a temporary file and renames it, so a retry after a worker died
// mid-write starts over and the output never holds a mini-batch twice.
func (a *Activities) appendRows(ctx context.Context, f parallelFolders, spec parallelSpec, b stepio.Bindings, beat *finishBeat) error {
	p := spec.Input.Parallel
	target, ok := b.Output(p.Task.AppendRowTo)
	if !ok {
		return stepio.Invalid("step %q: append_row_to names output %q, which the step does not have: recompile the pipeline", spec.Input.StepPath, p.Task.AppendRowTo)
	}
	if outputType(spec.Input.Outputs, p.Task.AppendRowTo) != "uri_file" {
		target = filepath.Join(target, plan.AppendRowFileName)
	}
	if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
		return stepio.FileError(fmt.Sprintf("step %q: output %q: create the folder of %s", spec.Input.StepPath, p.Task.AppendRowTo, target), err)
	}
	tmp := target + ".porch-tmp"
	out, err := os.Create(tmp)
	if err != nil {
		return stepio.FileError(fmt.Sprintf("step %q: output %q: create %s", spec.Input.StepPath, p.Task.AppendRowTo, tmp), err)
	}
	// A failed append (a full disk, say) leaves no temporary file holding
	// the space.
	committed := false
	defer func() {
		if !committed {
			out.Close()
			os.Remove(tmp)
		}
	}()
	w := bufio.NewWriterSize(out, 1<<20)
	var header []byte
	finished := doneSet{f: f}
	for i := range spec.Plan.Batches {
		beat.set("appending rows", i)
		ok, err := finished.has(ctx, i)
		if err != nil {
			return fmt.Errorf("list finished mini-batches: %w", err)
		}
		if !ok {
			continue
		}
		done, ok, err := finished.record(ctx, i)
		if err == nil && ok {
			_, err = f.share.fetch(ctx, resultOf(i))
		}
		if err != nil {
			return fmt.Errorf("read the results of mini-batch %d: %w", i, err)
		}
		if !ok {
			continue
		}
		if err := copyResult(w, f.result(i), done.Format == "csv", &header); err != nil {
			return stepio.FileError(fmt.Sprintf("step %q: output %q: append the results of mini-batch %d to %s", spec.Input.StepPath, p.Task.AppendRowTo, i, tmp), err)
		}
	}
	err = w.Flush()
	if err == nil {
		err = out.Close()
	}
	if err == nil {
		err = os.Rename(tmp, target)
	}
	if err != nil {
		return stepio.FileError(fmt.Sprintf("step %q: output %q: write %s", spec.Input.StepPath, p.Task.AppendRowTo, target), err)
	}
	committed = true
	return nil
}

// copyResult appends one mini-batch's result file. A file that starts with
// the same header line as an earlier one (a DataFrame's CSV) has it dropped.
func copyResult(w io.Writer, path string, csvResult bool, header *[]byte) error {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if csvResult {
		first, rest, _ := bytes.Cut(data, []byte("\n"))
		if *header == nil {
			*header = append([]byte{}, first...)
		} else if bytes.Equal(first, *header) {
			data = rest
		}
	}
	if len(data) > 0 && data[len(data)-1] != '\n' {
		data = append(data, '\n')
	}
	_, err = w.Write(data)
	return err
}

func outputType(outs []plan.Output, name string) string {
	for _, o := range outs {
		if o.Name == name {
			return o.Type
		}
	}
	return ""
}

// writeResult writes job_result.txt and, from the per-attempt reports of
// every node, job_error.txt.
func writeResult(ctx context.Context, f parallelFolders, in FinishParallelInput) error {
	c := in.Progress.Counters
	var b strings.Builder
	if in.Succeeded {
		fmt.Fprintf(&b, "succeeded: %d of %d mini-batches processed (%d succeeded, %d failed); %d items, %d failed%s\n",
			c.Processed(), c.Batches, c.Succeeded, c.Failed, c.Items, c.FailedItems, c.shortNote())
	} else {
		fmt.Fprintf(&b, "failed: %s\n%d of %d mini-batches processed (%d succeeded, %d failed); %d items, %d failed\n",
			in.Reason, c.Processed(), c.Batches, c.Succeeded, c.Failed, c.Items, c.FailedItems)
	}
	if err := os.WriteFile(filepath.Join(f.logs, "job_result.txt"), []byte(b.String()), 0o644); err != nil {
		return err
	}
	reports, err := f.share.list(ctx, path.Dir(processedReport))
	if err != nil {
		return err
	}
	if !slices.Contains(reports, processedReport) {
		reports = append(reports, processedReport)
	}
	finished := doneSet{f: f}
	var rows [][]string
	for _, rel := range reports {
		if _, err := f.share.fetch(ctx, rel); err != nil && rel != processedReport {
			return err
		}
		r, err := reportRows(f.local(rel))
		if err != nil {
			return err
		}
		rows = append(rows, r...)
	}
	errs, err := lastErrors(ctx, rows, &finished)
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(f.logs, "job_error.txt"), []byte(errs), 0o644)
}

// reportRows reads the rows of a processed_mini-batches.csv.
func reportRows(report string) ([][]string, error) {
	file, err := os.Open(report)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer file.Close()
	r := csv.NewReader(file)
	r.FieldsPerRecord = -1
	var rows [][]string
	for {
		rec, err := r.Read()
		if err == io.EOF {
			return rows, nil
		}
		if err != nil || len(rec) < len(processedHeader) || rec[0] == processedHeader[0] {
			continue
		}
		rows = append(rows, rec)
	}
}

// lastErrors lists, for every mini-batch that never succeeded, its last
// attempt's error. A mini-batch with a done record succeeded, even when the
// node that ran it has not published its report yet.
func lastErrors(ctx context.Context, rows [][]string, finished *doneSet) (string, error) {
	type last struct {
		attempt string
		err     string
		ok      bool
	}
	byIndex := map[int]*last{}
	for _, rec := range rows {
		i, _ := strconv.Atoi(rec[0])
		l := byIndex[i]
		if l == nil {
			l = &last{}
			byIndex[i] = l
		}
		switch rec[2] {
		case "succeeded":
			l.ok = true
		case "failed":
			l.attempt, l.err = rec[1], rec[9]
		}
	}
	for i, l := range byIndex {
		if !l.ok && l.err != "" {
			done, err := finished.has(ctx, i)
			if err != nil {
				return "", err
			}
			l.ok = done
		}
	}
	var idx []int
	for i, l := range byIndex {
		if !l.ok && l.err != "" {
			idx = append(idx, i)
		}
	}
	sort.Ints(idx)
	var b strings.Builder
	for _, i := range idx {
		fmt.Fprintf(&b, "mini-batch %d (attempt %s): %s\n", i, byIndex[i].attempt, byIndex[i].err)
	}
	return b.String(), nil
}

// copyLogsToParent copies the step's job_result.txt and progress overview
// into the enclosing pipeline's logs, under the step's name.
func (a *Activities) copyLogsToParent(ctx context.Context, f parallelFolders, in FinishParallelInput) error {
	ref := in.Progress.Ref
	parent := stepio.StepArtifactsURI(ref.Datastore, ref.RunID, in.ParentPath)
	if in.ParentPath == "" {
		parent = plan.DatastoreURI(ref.Datastore, "azureml/"+ref.RunID+"/"+plan.ArtifactsOutput+"/")
	}
	pf, err := a.artifactsFolder(parent)
	if err != nil {
		return err
	}
	dir := "logs/" + ref.StepPath
	if err := os.MkdirAll(pf.local(dir), 0o755); err != nil {
		return err
	}
	entries, err := os.ReadDir(f.logs)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if e.Type().IsRegular() && (e.Name() == "job_result.txt" || e.Name() == "job_error.txt" || strings.HasPrefix(e.Name(), "job_progress_overview.")) {
			data, err := os.ReadFile(filepath.Join(f.logs, e.Name()))
			if err != nil {
				return err
			}
			rel := dir + "/" + e.Name()
			if err := os.WriteFile(pf.local(rel), data, 0o644); err != nil {
				return err
			}
			if err := pf.share.publish(ctx, rel); err != nil {
				return err
			}
		}
	}
	return nil
}

// finishBeat is FinishParallel's heartbeat: the phase it is in and, while
// it appends rows, the mini-batch it is at. Temporal's UI shows it as the
// pending activity's details.
type finishBeat struct {
	mu        sync.Mutex
	phase     string
	miniBatch int
}

func (b *finishBeat) set(phase string, miniBatch int) {
	b.mu.Lock()
	b.phase, b.miniBatch = phase, miniBatch
	b.mu.Unlock()
}

// details is the heartbeat's JSON.
func (b *finishBeat) details() any {
	b.mu.Lock()
	defer b.mu.Unlock()
	return stepio.Beat{Phase: b.phase, MiniBatch: b.miniBatch}
}
