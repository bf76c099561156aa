package worker_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/porch-pipelines/porch/activities/objectstore"
	"github.com/porch-pipelines/porch/activities/objectstore/azuritetest"
	"github.com/porch-pipelines/porch/compiler/plan"
	"github.com/porch-pipelines/porch/workflows"
)

// azureContainer starts Azurite, makes a container of its account, and
// gives this process's workers (and the worker processes it starts) the
// account's connection string, nothing else Azure.
func azureContainer(t *testing.T) (azuritetest.Server, string) {
	t.Helper()
	srv, name := azuritetest.Start(t, azuritetest.Account)
	for _, k := range []string{objectstore.EnvStorageAccount, objectstore.EnvStorageKey, objectstore.EnvStorageSAS,
		"AZURE_TENANT_ID", "AZURE_CLIENT_ID", objectstore.EnvClientSecret} {
		t.Setenv(k, "")
	}
	t.Setenv(objectstore.EnvConnectionString, srv.ConnectionString(azuritetest.Account))
	return srv, name
}

// registerAzure registers an azure_blob datastore on container for the
// test's length. The catalogue answers only once a worker runs porch's
// workflows.
func registerAzure(t *testing.T, container string) *plan.Datastore {
	t.Helper()
	store := &plan.Datastore{Name: "blob" + strconv.FormatInt(time.Now().UnixNano(), 36), Type: plan.DatastoreAzureBlob,
		AccountName: azuritetest.Account, ContainerName: container}
	_, err := workflows.RegisterCatalogEntry(context.Background(), temporalClient, workflows.CatalogEntry{Datastore: store})
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = workflows.RemoveCatalogEntry(context.Background(), temporalClient, workflows.CatalogRemoval{Kind: workflows.KindDatastore, Name: store.Name})
	})
	return store
}

// upload puts files (path -> content) on the store.
func upload(t *testing.T, s *objectstore.Store, files map[string]string) {
	t.Helper()
	for p, body := range files {
		require.NoError(t, s.Put(context.Background(), p, strings.NewReader(body), int64(len(body))))
	}
}

// readObject is the content of the object p.
func readObject(t *testing.T, s *objectstore.Store, p string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "obj")
	require.NoError(t, s.GetFile(context.Background(), p, dst))
	b, err := os.ReadFile(dst)
	require.NoError(t, err)
	return string(b)
}

// TestAPipelineReadsAzureInputsInEveryModeAndWritesToBlob runs, on a
// worker given only a connection string, a step per input mode reading
// the same blob as wasbs://, as a blob https:// URL and as a path of a
// registered azure_blob datastore, with outputs on that datastore.
func TestAPipelineReadsAzureInputsInEveryModeAndWritesToBlob(t *testing.T) {
	srv, container := azureContainer(t)
	h := newHarness(t) // the catalogue answers once a worker runs porch's workflows
	store := registerAzure(t, container)
	s, err := objectstore.Open(*store)
	require.NoError(t, err)
	upload(t, s, map[string]string{"in/data.txt": "alpha\n", "in/dir/a.txt": "a\n", "in/dir/sub/b.txt": "b\n"})

	wasbs := fmt.Sprintf("wasbs://%s@%s.blob.core.windows.net/in/data.txt", container, azuritetest.Account)
	https := fmt.Sprintf("https://%s.blob.core.windows.net/%s/in/dir", azuritetest.Account, container)
	datastore := "azureml://datastores/" + store.Name + "/paths/in/data.txt"
	var jobs strings.Builder
	for _, mode := range []string{"ro_mount", "download", "direct"} {
		command := `cat ${{inputs.blob}} ${{inputs.lake}} ${{inputs.folder}}/a.txt ${{inputs.folder}}/sub/b.txt > ${{outputs.out}}/got.txt`
		if mode == "direct" {
			command = `echo ${{inputs.blob}} ${{inputs.lake}} ${{inputs.folder}} > ${{outputs.out}}/got.txt`
		}
		fmt.Fprintf(&jobs, `  %[1]s:
    command: %[2]s
    inputs:
      blob: {type: uri_file, path: %[3]q, mode: %[1]s}
      lake: {type: uri_file, path: %[4]q, mode: %[1]s}
      folder: {type: uri_folder, path: %[5]q, mode: %[1]s}
    outputs:
      out: {type: uri_folder}
`, strings.ReplaceAll(mode, "ro_mount", "mount"), command, wasbs, datastore, https)
	}
	jobs.WriteString("  report:\n    command: echo done > ${{outputs.report}}\n    outputs:\n      report:\n        type: uri_file\n" +
		"        path: azureml://datastores/" + store.Name + "/paths/reports/${{name}}.txt\n")
	path := writePipeline(t, "type: pipeline\nsettings:\n  default_datastore: azureml:"+store.Name+"\njobs:\n"+
		strings.ReplaceAll(jobs.String(), "  mount:", "  ro_mount:"))
	// (The step names are the modes; ro_mount's is written as such.)
	runID, err := h.run(compile(t, path, nil))
	require.NoError(t, err)

	for _, step := range []string{"ro_mount", "download"} {
		assert.Equal(t, "alpha\nalpha\na\nb\n", readObject(t, s, "azureml/"+runID+"/"+step+"/out/got.txt"), step)
		committed, err := s.Committed(context.Background(), "azureml/"+runID+"/"+step+"/out")
		require.NoError(t, err)
		assert.True(t, committed, "%s's output is committed", step)
	}
	direct := strings.Fields(readObject(t, s, "azureml/"+runID+"/direct/out/got.txt"))
	require.Len(t, direct, 3)
	assert.Equal(t, wasbs, direct[0], "a URI the pipeline wrote is passed as written")
	assert.Equal(t, srv.Endpoint(azuritetest.Account)+"/"+container+"/in/data.txt", direct[1], "a datastore path is passed as the blob's URL")
	assert.Equal(t, https, direct[2])
	assert.Equal(t, "done\n", readObject(t, s, "reports/"+runID+".txt"))
	assertSecretNowhere(t, azuritetest.Key, runID, h.home)
}

// TestReuseKeysBlobsByContentTagAndWebFilesByETag runs a pipeline reading a
// blob (wasbs://) and a web file (https://, two steps) again and again: an
// unchanged run reuses every step and fetches the web file no more; a
// changed blob makes its step run and say why; a changed web file is
// fetched once for both steps that read it.
func TestReuseKeysBlobsByContentTagAndWebFilesByETag(t *testing.T) {
	_, container := azureContainer(t)
	h := newHarness(t)
	s, err := objectstore.Open(plan.Datastore{Type: plan.DatastoreAzureBlob, AccountName: azuritetest.Account, ContainerName: container})
	require.NoError(t, err)
	upload(t, s, map[string]string{"in/iris.csv": "a,b\n1,2\n"})
	webPath := "/" + container + "/iris.csv"
	site.put(webPath, "x,y\n3,4\n")
	path := writePipeline(t, fmt.Sprintf(`type: pipeline
jobs:
  blob:
    command: cat ${{inputs.data}} > ${{outputs.out}}/got.csv
    inputs:
      data: {type: uri_file, path: "wasbs://%s@%s.blob.core.windows.net/in/iris.csv"}
    outputs:
      out: {type: uri_folder}
  web_download:
    command: cat ${{inputs.data}} > ${{outputs.out}}/got.csv
    inputs:
      data: {type: uri_file, path: "%s", mode: download}
    outputs:
      out: {type: uri_folder}
  web_mount:
    command: cat ${{inputs.data}} > ${{outputs.out}}/got.csv
    inputs:
      data: {type: uri_file, path: "%[3]s"}
    outputs:
      out: {type: uri_folder}
`, container, azuritetest.Account, site.URL+webPath))
	run := func() (string, map[string]string) {
		t.Helper()
		id, err := h.run(compileReusable(t, path, nil))
		require.NoError(t, err)
		return id, reasons(t, id)
	}
	out := func(runID, step string) string {
		for _, o := range steps(t, runID)[step].Outputs {
			if o.Name == "out" {
				b, err := os.ReadFile(filepath.Join(h.localPath(o.URI), "got.csv"))
				require.NoError(t, err)
				return string(b)
			}
		}
		return ""
	}

	first, got := run()
	assert.Equal(t, map[string]string{"blob": "succeeded: first run", "web_download": "succeeded: first run", "web_mount": "succeeded: first run"}, got)
	assert.Equal(t, 1, site.getCount(webPath), "two steps read the web file; it is fetched once, into the cache")
	assert.Equal(t, "x,y\n3,4\n", out(first, "web_mount"))
	_, got = run()
	assert.Equal(t, map[string]string{"blob": "reused", "web_download": "reused", "web_mount": "reused"}, got)
	assert.Equal(t, 1, site.getCount(webPath), "a reused run fetches nothing")

	upload(t, s, map[string]string{"in/iris.csv": "a,b\n5,6\n"})
	changed, got := run()
	assert.Regexp(t, `^succeeded: input "data" changed \(content [0-9a-f]{8}… → [0-9a-f]{8}…\)$`, got["blob"])
	assert.Equal(t, "reused", got["web_download"])
	assert.Equal(t, "a,b\n5,6\n", out(changed, "blob"))

	site.put(webPath, "x,y\n7,8\n")
	edited, got := run()
	assert.Equal(t, "reused", got["blob"])
	assert.Regexp(t, `^succeeded: input "data" changed`, got["web_download"])
	assert.Regexp(t, `^succeeded: input "data" changed`, got["web_mount"])
	assert.Equal(t, 2, site.getCount(webPath), "the new version is fetched once")
	assert.Equal(t, "x,y\n7,8\n", out(edited, "web_download"))
	cached, err := filepath.Glob(filepath.Join(h.home, "cache", "web", "content", "*", "iris.csv"))
	require.NoError(t, err)
	assert.Len(t, cached, 2, "one cached file per version, named as the URL's")
}

// TestParallelOverABlobFolderIsExactAfterAWorkerIsKilled runs a parallel
// step over a folder of an azure_blob datastore, with its state and its
// append_row_to output on that datastore, on two worker processes that
// share no folder, and kills (SIGKILL) one in the middle: every input row
// is in the output once, in order.
func TestParallelOverABlobFolderIsExactAfterAWorkerIsKilled(t *testing.T) {
	_, container := azureContainer(t)
	ctx := context.Background()
	home := t.TempDir()
	w := startWorker(t, home) // workflows only; the step runs on compute "blobbatch"
	t.Cleanup(w.Stop)
	store := registerAzure(t, container)
	s, err := objectstore.Open(*store)
	require.NoError(t, err)

	files := names("tick", 40)
	path, _ := parallelCase{files: files, settings: `    compute: azureml:blobbatch
    mini_batch_size: "2"
    resources:
      instance_count: 2
    max_concurrency_per_instance: 2
    mini_batch_error_threshold: 0`, args: "--progress_update_timeout 3"}.write(t)
	_, err = s.Upload(ctx, filepath.Join(filepath.Dir(path), "data"), "inputs/ticks")
	require.NoError(t, err)
	require.NoError(t, os.RemoveAll(filepath.Join(filepath.Dir(path), "data")), "the input is only on blob storage")
	src, err := os.ReadFile(path)
	require.NoError(t, err)
	yml := strings.Replace(string(src), "path: ./data", "path: azureml://datastores/"+store.Name+"/paths/inputs/ticks", 1)
	yml = strings.Replace(yml, "type: pipeline\n", "type: pipeline\nsettings:\n  default_datastore: azureml:"+store.Name+"\n", 1)
	require.NoError(t, os.WriteFile(path, []byte(yml), 0o644))

	victim := startWorkerProcess(t, t.TempDir(), "blobbatch", "victim")
	startWorkerProcess(t, t.TempDir(), "blobbatch", "survivor")
	h := &harness{t: t, home: home}
	run := h.start(compile(t, path, nil))
	step := "azureml/" + run.GetID() + "/score/"

	// Waits until the victim has finished a few mini-batches (their done
	// records are on the store), so it is surely in the middle of others
	// when it dies.
	require.Eventually(t, func() bool {
		n := 0
		for _, r := range doneRecords(t, s, step+"artifacts/porch/done") {
			if r.Node == "victim" {
				n++
			}
		}
		return n >= 3
	}, 2*time.Minute, 100*time.Millisecond, "the victim finishes mini-batches")
	require.NoError(t, victim.Process.Kill())

	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	require.NoError(t, run.Get(ctx, nil))
	var want []string
	for i, f := range files {
		want = append(want, fmt.Sprintf("%s,%d", f, i))
	}
	got := strings.Split(strings.TrimSuffix(readObject(t, s, step+"scores/"+plan.AppendRowFileName), "\n"), "\n")
	assert.Equal(t, want, got, "every input row once, in order, after the kill")
	committed, err := s.Committed(ctx, step+"scores")
	require.NoError(t, err)
	assert.True(t, committed)
}

// blobTrial logs the metric "score": the number in the file --data names
// (a blob) times --x, so a trial's metric shows it read the blob.
const blobTrial = `import argparse
import mlflow

p = argparse.ArgumentParser()
p.add_argument("--data", required=True)
p.add_argument("--x", type=float, required=True)
args = p.parse_args()
with open(args.data) as f:
    base = float(f.read().strip())
with mlflow.start_run():
    mlflow.log_metric("score", base * args.x)
`

// TestASweepsTrialsReadABlobFile runs a sweep job whose trials read their
// data from a wasbs:// URI.
func TestASweepsTrialsReadABlobFile(t *testing.T) {
	needPython(t)
	_, container := azureContainer(t)
	h := newHarness(t)
	s, err := objectstore.Open(plan.Datastore{Type: plan.DatastoreAzureBlob, AccountName: azuritetest.Account, ContainerName: container})
	require.NoError(t, err)
	upload(t, s, map[string]string{"base.txt": "7\n"})
	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "src"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "src", "trial.py"), []byte(blobTrial), 0o644))
	path := filepath.Join(dir, "sweep.yml")
	require.NoError(t, os.WriteFile(path, []byte(fmt.Sprintf(`type: sweep
name: blobsweep
trial:
  code: ./src
  command: python3 trial.py --data ${{inputs.data}} --x ${{search_space.x}}
inputs:
  data:
    type: uri_file
    path: wasbs://%s@%s.blob.core.windows.net/base.txt
sampling_algorithm: grid
search_space:
  x:
    type: choice
    values: [1, 2, 3]
objective:
  goal: maximize
  primary_metric: score
limits:
  max_total_trials: 3
  max_concurrent_trials: 3
`, container, azuritetest.Account)), 0o644))
	runID, err := h.run(compile(t, path, nil))
	require.NoError(t, err)
	st := steps(t, runID)
	require.Len(t, st, 1)
	var stepPath string
	for p := range st {
		stepPath = p
	}
	v, err := temporalClient.QueryWorkflow(context.Background(), runID+"/"+stepPath, "", workflows.TrialsQuery)
	require.NoError(t, err)
	var p workflows.SweepProgress
	require.NoError(t, v.Get(&p))
	require.Len(t, p.Trials, 3)
	best, value := p.Best()
	require.GreaterOrEqual(t, best, 0)
	assert.Equal(t, 21.0, value, "the best trial read 7 from the blob and took x = 3")
}

// TestAzureRefusalsFailTheStepOnceAndSayWhy: a wrong key, an expired SAS
// and a missing container fail the step on its first attempt (trying
// again cannot help) with what to fix; the secret is nowhere in the run's
// history or the worker's files.
func TestAzureRefusalsFailTheStepOnceAndSayWhy(t *testing.T) {
	srv, container := azureContainer(t)
	h := newHarness(t)
	expired, err := srv.SAS(azuritetest.Account, container, "rl", time.Now().Add(-time.Hour))
	require.NoError(t, err)
	wrongKey := strings.Repeat("V3Jv", 22) + "bmc="
	endpoint := "BlobEndpoint=" + srv.Endpoint(azuritetest.Account) + ";"
	for _, c := range []struct {
		name, conn, container, want, secret string
	}{
		{"wrong key", endpoint + "AccountName=" + azuritetest.Account + ";AccountKey=" + wrongKey, container,
			"the service refused this worker's account key (from AZURE_STORAGE_CONNECTION_STRING)", wrongKey},
		{"expired SAS", endpoint + "SharedAccessSignature=" + expired, container,
			"the SAS token from AZURE_STORAGE_CONNECTION_STRING expired at", objectstoreSig(expired)},
		{"missing container", srv.ConnectionString(azuritetest.Account), "no-such-container",
			`there is no container "no-such-container" in account "devstoreaccount1"`, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv(objectstore.EnvConnectionString, c.conn)
			w := startWorker(t, h.home, "refused") // a fresh worker: its stores open with this connection string
			t.Cleanup(w.Stop)
			path := writePipeline(t, fmt.Sprintf(`type: pipeline
jobs:
  read:
    compute: azureml:refused
    command: cat ${{inputs.data}}
    inputs:
      data: {type: uri_file, path: "wasbs://%s@%s.blob.core.windows.net/in/data.txt", mode: download}
`, c.container, azuritetest.Account))
			runID, err := h.run(compile(t, path, nil))
			require.Error(t, err)
			st := steps(t, runID)["read"]
			assert.Equal(t, workflows.StatusFailed, st.Status)
			assert.Contains(t, st.Error, c.want)
			assert.Equal(t, int32(1), st.Attempt, "not retried: trying again cannot help")
			if c.secret != "" {
				assertSecretNowhere(t, c.secret, runID, h.home)
			}
		})
	}
}

// objectstoreSig is a SAS token's signature, its secret part.
func objectstoreSig(sas string) string {
	for _, kv := range strings.Split(sas, "&") {
		if v, ok := strings.CutPrefix(kv, "sig="); ok {
			return v
		}
	}
	return sas
}
