package parallel

import (
	"bytes"
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/porch-pipelines/porch/activities/stepio"
)

// processedHeader is the header of processed_mini-batches.csv.
var processedHeader = []string{"mini_batch_id", "attempt", "result", "node", "process", "start_time", "elapsed_seconds", "items", "returned", "error"}

// reportRow is one attempt of one mini-batch.
type reportRow struct {
	index    int
	attempt  int32
	result   string
	node     string
	process  string
	start    time.Time
	elapsed  time.Duration
	items    int
	returned int
	err      string
}

// report appends an attempt to processed_mini-batches.csv. Each row is one
// write to a file opened for appending, so rows from many processes and
// workers never interleave.
func (rt *parallelRuntime) report(r reportRow) {
	var buf bytes.Buffer
	w := csv.NewWriter(&buf)
	_ = w.Write([]string{
		strconv.Itoa(r.index), strconv.Itoa(int(r.attempt)), r.result, r.node, r.process,
		r.start.UTC().Format(time.RFC3339Nano), strconv.FormatFloat(r.elapsed.Seconds(), 'f', 3, 64),
		strconv.Itoa(r.items), strconv.Itoa(r.returned), stepio.FirstLine(r.err),
	})
	w.Flush()
	if err := appendBytes(rt.folders.processedCSV(), buf.Bytes()); err != nil {
		rt.log(fmt.Sprintf("porch: cannot record mini-batch %d in processed_mini-batches.csv: %v", r.index, err))
	}
}

func appendBytes(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if errors.Is(err, fs.ErrNotExist) {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		f, err = os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	}
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// writeReadme explains the step's log folder, and starts the per-attempt
// report with its header.
func writeReadme(f parallelFolders, p ParallelPlan) error {
	if err := ensureReport(f); err != nil {
		return err
	}
	readme := fmt.Sprintf(`This folder holds the logs of parallel step %q of run %q, as porch writes them
(in Azure Machine Learning's layout of a parallel job's logs).

The input was split into %d mini-batches (%d items in %d files).

job_result.txt                            the step's result, and the root cause when it failed
job_progress_overview.<time>.txt          progress over time
job_error.txt                             the last error of every mini-batch that failed
sys/job_report/processed_mini-batches.csv one row per attempt of a mini-batch
sys/perf/<node>/                          resource usage of each node (resource_monitor_interval)
sys/porch.txt                             porch's own notes
user/entry_script_log/<node>/<process>.log.txt  the entry script's logger
user/stdout/<node>/<process>.txt          what each entry-script process printed
user/stderr/<node>/<process>.txt          what each entry-script process wrote to stderr

On an s3 datastore, where a file cannot be appended to, each node writes its own
sys/job_report/processed_mini-batches.<node>.csv and sys/porch.<node>.txt.
`, p.Ref.StepPath, p.Ref.RunID, p.Batches, p.Items, p.Files)
	return os.WriteFile(filepath.Join(f.logs, "readme.txt"), []byte(readme), 0o644)
}

// ensureReport starts this worker's processed_mini-batches.csv with its
// header when there is none.
func ensureReport(f parallelFolders) error {
	if err := os.MkdirAll(filepath.Dir(f.processedCSV()), 0o755); err != nil {
		return err
	}
	if _, err := os.Stat(f.processedCSV()); errors.Is(err, fs.ErrNotExist) {
		return appendBytes(f.processedCSV(), []byte(strings.Join(processedHeader, ",")+"\n"))
	}
	return nil
}

// progressLine describes counters in one line.
func progressLine(at time.Time, c ParallelCounters) string {
	return fmt.Sprintf("%s  %d of %d mini-batches processed: %d succeeded, %d failed, %d running; %d items, %d failed%s",
		at.UTC().Format("2006-01-02 15:04:05"), c.Processed(), c.Batches, c.Succeeded, c.Failed, c.Running, c.Items, c.FailedItems, c.shortNote())
}

// ReportParallelProgress appends a line to the step's
// job_progress_overview.<start>.txt.
func (a *Activities) ReportParallelProgress(ctx context.Context, in ProgressInput) error {
	a.RefreshDatastores(ctx)
	f, err := a.parallelFolders(in.Ref)
	if err != nil {
		return err
	}
	return writeProgress(ctx, f, in)
}

func writeProgress(ctx context.Context, f parallelFolders, in ProgressInput) error {
	name := "logs/job_progress_overview." + in.Started.UTC().Format("20060102150405") + ".txt"
	return f.share.appendLine(ctx, name, []byte(progressLine(in.At, in.Counters)+"\n"))
}
