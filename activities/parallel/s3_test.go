package parallel

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/minio/minio-go/v7"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/porch-pipelines/porch/activities/internal/testpython"
	"github.com/porch-pipelines/porch/activities/minibatch"
	"github.com/porch-pipelines/porch/activities/objectstore"
	"github.com/porch-pipelines/porch/activities/objectstore/s3test"
	"github.com/porch-pipelines/porch/activities/stepio"
	"github.com/porch-pipelines/porch/compiler/plan"
)

func TestMain(m *testing.M) { os.Exit(s3test.Main(m)) }

// fetchCounter is an HTTP transport that counts the bytes of every object
// read under one key prefix, by key, and the ranges asked for.
type fetchCounter struct {
	prefix string
	mu     sync.Mutex
	bytes  map[string]int64
	ranges []string
}

func (c *fetchCounter) RoundTrip(req *http.Request) (*http.Response, error) {
	base, err := minio.DefaultTransport(false)
	if err != nil {
		return nil, err
	}
	resp, err := base.RoundTrip(req)
	if err != nil || req.Method != http.MethodGet || !strings.Contains(req.URL.Path, c.prefix) {
		return resp, err
	}
	key := req.URL.Path[strings.Index(req.URL.Path, c.prefix):]
	c.mu.Lock()
	if r := req.Header.Get("Range"); r != "" {
		c.ranges = append(c.ranges, key+" "+r)
	}
	c.mu.Unlock()
	resp.Body = &countingBody{ReadCloser: resp.Body, add: func(n int) {
		c.mu.Lock()
		c.bytes[key] += int64(n)
		c.mu.Unlock()
	}}
	return resp, nil
}

func (c *fetchCounter) reset() {
	c.mu.Lock()
	c.bytes, c.ranges = map[string]int64{}, nil
	c.mu.Unlock()
}

type countingBody struct {
	io.ReadCloser
	add func(int)
}

func (b *countingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.add(n)
	return n, err
}

// s3Step is a parallel step whose input, state and outputs are on a fresh
// MinIO bucket, and a worker that counts what it reads of the input.
type s3Step struct {
	a       *Activities
	counter *fetchCounter
	store   *objectstore.Store
	in      PlanMiniBatchesInput
}

func newS3Step(t *testing.T, typ, size string, files map[string]string, script string) s3Step {
	endpoint, access, secret, bucket := s3test.Start(t)
	t.Setenv("AWS_ACCESS_KEY_ID", access)
	t.Setenv("AWS_SECRET_ACCESS_KEY", secret)
	d := plan.Datastore{Name: "lake", Type: plan.DatastoreS3, Endpoint: endpoint, Bucket: bucket, Prefix: "p"}
	s, err := objectstore.Open(d)
	require.NoError(t, err)
	dir := t.TempDir()
	for name, body := range files {
		require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(dir, "data", name)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, "data", name), []byte(body), 0o644))
	}
	_, err = s.Upload(context.Background(), filepath.Join(dir, "data"), "inputs/data")
	require.NoError(t, err)
	code := filepath.Join(dir, "src")
	require.NoError(t, os.MkdirAll(code, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(code, "score.py"), []byte(script), 0o644))

	counter := &fetchCounter{prefix: "/p/inputs/", bytes: map[string]int64{}}
	a := &Activities{Host: &stepio.Host{Home: t.TempDir(), Node: "n1", Transport: counter, Datastores: func(context.Context) ([]plan.Datastore, error) { return []plan.Datastore{d}, nil }}, Python: testpython.Interpreter(t)}
	t.Cleanup(func() { a.Close(context.Background()) })
	in := PlanMiniBatchesInput{
		RunID: "run1", StepPath: "score", DefaultDatastore: d.Name,
		Parallel: plan.Parallel{
			InputData: "data", MiniBatchSize: size, MaxConcurrencyPerInstance: 1,
			Resources: plan.Resources{InstanceCount: 1},
			Retry:     plan.ParallelRetry{TimeoutSeconds: 30}, TaskOverheadTimeoutSeconds: 30,
			Task: plan.ParallelTask{Code: code, EntryScript: "score.py", AppendRowTo: "out"},
		},
		Inputs: []plan.Input{{Name: "data", Type: typ, Value: plan.Value{Kind: plan.ValueData,
			Data: &plan.Data{Type: typ, Path: "azureml://datastores/lake/paths/inputs/data"}}}},
		Outputs: []plan.Output{{Name: "out", Type: "uri_folder"}},
	}
	return s3Step{a: a, counter: counter, store: s, in: in}
}

// TestAWorkerFetchesOnlyItsMiniBatchsObjects plans a folder of 30 objects
// on MinIO and runs one mini-batch: the worker reads exactly that
// mini-batch's 4 objects, whole, and nothing else of the input.
func TestAWorkerFetchesOnlyItsMiniBatchsObjects(t *testing.T) {
	files := map[string]string{}
	for i := range 30 {
		files[fmt.Sprintf("f%02d.txt", i)] = strings.Repeat("x", 100+i)
	}
	st := newS3Step(t, "uri_folder", "4", files, "import os\n\ndef run(mini_batch):\n    return [os.path.basename(p) for p in mini_batch]\n")
	ctx := context.Background()
	p, err := st.a.PlanMiniBatches(ctx, st.in)
	require.NoError(t, err)
	require.Equal(t, 8, p.Batches)

	st.counter.reset()
	r, err := st.a.RunMiniBatch(ctx, MiniBatchInput{Ref: p.Ref, Index: 2})
	require.NoError(t, err)
	assert.Equal(t, 4, r.Returned)
	want := map[string]int64{}
	for i := 8; i < 12; i++ {
		want[fmt.Sprintf("/p/inputs/data/f%02d.txt", i)] = int64(100 + i)
	}
	assert.Equal(t, want, st.counter.bytes, "the worker read only mini-batch 2's objects, each once")
	entries, err := os.ReadDir(filepath.Join(st.a.Home, "work", "run1", "score", "n1", ".porch-inputs"))
	require.NoError(t, err)
	assert.Empty(t, entries, "the mini-batch's objects are removed when it ends")

	// The done record and the result are on the store, where another
	// worker finds them.
	objs, err := st.store.List(ctx, "azureml/run1/score/artifacts/porch")
	require.NoError(t, err)
	var names []string
	for _, o := range objs {
		names = append(names, o.Path)
	}
	assert.Subset(t, names, []string{"spec.json", "manifest/" + minibatch.ManifestName, "done/0/2.json", "results/0/2.out"})
}

// TestAWorkerFetchesOnlyItsMiniBatchsByteRanges splits a CSV on MinIO by
// size: a mini-batch in the middle of the file reads the file's header and
// its own byte range, two ranged requests, and no other byte.
func TestAWorkerFetchesOnlyItsMiniBatchsByteRanges(t *testing.T) {
	var csv strings.Builder
	csv.WriteString("id,name\n")
	for i := range 200 {
		fmt.Fprintf(&csv, "%d,row %d\n", i, i)
	}
	st := newS3Step(t, "mltable", "200", map[string]string{"a.csv": csv.String()},
		"def run(mini_batch):\n    return mini_batch\n")
	ctx := context.Background()
	p, err := st.a.PlanMiniBatches(ctx, st.in)
	require.NoError(t, err)
	require.Greater(t, p.Batches, 5)

	f, err := st.a.parallelFolders(p.Ref)
	require.NoError(t, err)
	m, err := minibatch.Open(f.manifest())
	require.NoError(t, err)
	b, err := m.Batch(3)
	m.Close()
	require.NoError(t, err)
	part := b.Table.Parts[0]
	require.True(t, part.Header, "a part in the middle of the file needs the header")

	st.counter.reset()
	r, err := st.a.RunMiniBatch(ctx, MiniBatchInput{Ref: p.Ref, Index: 3})
	require.NoError(t, err)
	assert.Equal(t, b.Items, r.Returned)
	assert.Equal(t, map[string]int64{"/p/inputs/data/a.csv": part.HeaderLength + part.Length}, st.counter.bytes,
		"the worker read the header and its range, %d of the file's %d bytes", part.HeaderLength+part.Length, csv.Len())
	sort.Strings(st.counter.ranges)
	assert.Equal(t, []string{
		fmt.Sprintf("/p/inputs/data/a.csv bytes=%d-%d", 0, part.HeaderLength-1),
		fmt.Sprintf("/p/inputs/data/a.csv bytes=%d-%d", part.Offset, part.Offset+part.Length-1),
	}, st.counter.ranges)
	result, err := os.ReadFile(f.result(3))
	require.NoError(t, err)
	assert.Equal(t, "id,name\n"+csv.String()[part.Offset:part.Offset+part.Length], string(result),
		"run() got the range's rows under the file's header")
}

// TestAnotherWorkerResumesAStepOnObjectStorage runs one mini-batch on a
// worker, then plans the step again on a worker with a home of its own, as
// `porch job resume` does: the finished mini-batch is counted, listed as
// done and not run again, and append_row_to holds its results, which only
// the first worker computed.
func TestAnotherWorkerResumesAStepOnObjectStorage(t *testing.T) {
	files := map[string]string{}
	for i := range 10 {
		files[fmt.Sprintf("f%02d.txt", i)] = "x"
	}
	st := newS3Step(t, "uri_folder", "3", files, "import os\n\ndef run(mini_batch):\n    return [os.path.basename(p) for p in mini_batch]\n")
	ctx := context.Background()
	p, err := st.a.PlanMiniBatches(ctx, st.in)
	require.NoError(t, err)
	require.Equal(t, 4, p.Batches)
	_, err = st.a.RunMiniBatch(ctx, MiniBatchInput{Ref: p.Ref, Index: 1})
	require.NoError(t, err)

	other := &Activities{Host: &stepio.Host{Home: t.TempDir(), Node: "n2", Datastores: st.a.Datastores}, Python: st.a.Python}
	t.Cleanup(func() { other.Close(context.Background()) })
	again, err := other.PlanMiniBatches(ctx, st.in)
	require.NoError(t, err)
	assert.Equal(t, p.Ref, again.Ref, "the same mini-batches")
	assert.Equal(t, 1, again.Done, "the finished mini-batch is counted")
	pending, err := other.ListPendingMiniBatches(ctx, ListPendingInput{Ref: again.Ref, Limit: 10})
	require.NoError(t, err)
	assert.Equal(t, []int{0, 2, 3}, pending.Indexes)
	assert.Equal(t, 4, pending.Next)
	for i := range 4 {
		r, err := other.RunMiniBatch(ctx, MiniBatchInput{Ref: again.Ref, Index: i})
		require.NoError(t, err)
		assert.Equal(t, i == 1, r.Skipped, "mini-batch %d", i)
	}
	// Progress lines come from whichever worker the workflow's activity
	// lands on: they add up on the store.
	require.NoError(t, st.a.ReportParallelProgress(ctx, ProgressInput{Ref: again.Ref, Counters: ParallelCounters{Batches: 4, Succeeded: 3}}))
	res, err := other.FinishParallel(ctx, FinishParallelInput{
		Progress:  ProgressInput{Ref: again.Ref, Counters: ParallelCounters{Batches: 4, Succeeded: 4}},
		Succeeded: true,
	})
	require.NoError(t, err)
	require.NotEmpty(t, res.Outputs)
	got := filepath.Join(t.TempDir(), "out")
	_, err = st.store.Download(ctx, "azureml/run1/score/out", got)
	require.NoError(t, err)
	data, err := os.ReadFile(filepath.Join(got, plan.AppendRowFileName))
	require.NoError(t, err)
	var want strings.Builder
	for i := range 10 {
		fmt.Fprintf(&want, "f%02d.txt\n", i)
	}
	assert.Equal(t, want.String(), string(data), "every result once, in order, whichever worker computed it")
	progress, err := st.store.List(ctx, "azureml/run1/score/artifacts/logs")
	require.NoError(t, err)
	var names []string
	for _, o := range progress {
		names = append(names, o.Path)
	}
	assert.Contains(t, names, "job_result.txt")
	assert.Contains(t, names, "sys/job_report/processed_mini-batches.n2.csv")
	overview := filepath.Join(t.TempDir(), "overview.txt")
	require.NoError(t, st.store.GetFile(ctx, "azureml/run1/score/artifacts/logs/job_progress_overview.00010101000000.txt", overview))
	assert.Len(t, lines(t, overview), 2, "one line from each worker")
}

func lines(t *testing.T, path string) []string {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	return strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
}

// TestJobErrorGathersEveryNodesFailures fails a mini-batch on one worker
// and finishes the step on another: job_error.txt, on the store, names the
// failure the first worker saw, and not a mini-batch that succeeded.
func TestJobErrorGathersEveryNodesFailures(t *testing.T) {
	files := map[string]string{"a.txt": "x", "fail.txt": "x"}
	st := newS3Step(t, "uri_folder", "1", files,
		"import os\n\ndef run(mini_batch):\n    for p in mini_batch:\n        if 'fail' in p:\n            raise ValueError('cannot score ' + os.path.basename(p))\n    return mini_batch\n")
	ctx := context.Background()
	p, err := st.a.PlanMiniBatches(ctx, st.in)
	require.NoError(t, err)
	require.Equal(t, 2, p.Batches)
	_, err = st.a.RunMiniBatch(ctx, MiniBatchInput{Ref: p.Ref, Index: 0})
	require.NoError(t, err)
	_, err = st.a.RunMiniBatch(ctx, MiniBatchInput{Ref: p.Ref, Index: 1})
	require.ErrorContains(t, err, "cannot score fail.txt")

	other := &Activities{Host: &stepio.Host{Home: t.TempDir(), Node: "n2", Datastores: st.a.Datastores}, Python: st.a.Python}
	t.Cleanup(func() { other.Close(context.Background()) })
	_, err = other.FinishParallel(ctx, FinishParallelInput{
		Progress: ProgressInput{Ref: p.Ref, Counters: ParallelCounters{Batches: 2, Succeeded: 1, Failed: 1}},
		Reason:   "mini-batch 1 failed",
	})
	require.NoError(t, err)
	local := filepath.Join(t.TempDir(), "job_error.txt")
	require.NoError(t, st.store.GetFile(ctx, "azureml/run1/score/artifacts/logs/job_error.txt", local))
	data, err := os.ReadFile(local)
	require.NoError(t, err)
	assert.Equal(t, "mini-batch 1 (attempt 1): run() raised ValueError: cannot score fail.txt\n", string(data))
}
