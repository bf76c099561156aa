package command

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/porch-pipelines/porch/activities/objectstore"
	"github.com/porch-pipelines/porch/activities/objectstore/lazyfs"
	"github.com/porch-pipelines/porch/activities/objectstore/s3test"
	"github.com/porch-pipelines/porch/activities/stepio"
	"github.com/porch-pipelines/porch/compiler/plan"
)

// lakeWorker is a worker whose datastore "lake" is a fresh bucket on the test
// MinIO holding the folder in/ (a.txt, sub/b.txt) and the file one.csv.
func lakeWorker(t *testing.T) (*Activities, plan.Datastore) {
	endpoint, access, secret, bucket := s3test.Start(t)
	for _, k := range []string{"AWS_SESSION_TOKEN", "AWS_PROFILE"} {
		t.Setenv(k, "")
	}
	t.Setenv("AWS_ACCESS_KEY_ID", access)
	t.Setenv("AWS_SECRET_ACCESS_KEY", secret)
	lake := plan.Datastore{Name: "lake", Type: plan.DatastoreS3, Endpoint: endpoint, Bucket: bucket, Prefix: "porch"}
	s, err := objectstore.Open(lake)
	require.NoError(t, err)
	src := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(src, "in", "sub"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(src, "in", "a.txt"), []byte("alpha\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(src, "in", "sub", "b.txt"), []byte("beta\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(src, "one.csv"), []byte("x,y\n"), 0o644))
	_, err = s.Upload(context.Background(), filepath.Join(src, "in"), "in")
	require.NoError(t, err)
	_, err = s.Upload(context.Background(), filepath.Join(src, "one.csv"), "one.csv")
	require.NoError(t, err)
	a := &Activities{Host: &stepio.Host{Home: t.TempDir(), KillGrace: 2 * time.Second, Datastores: func(context.Context) ([]plan.Datastore, error) {
		return []plan.Datastore{lake}, nil
	}}}
	return a, lake
}

// needFUSE skips a test that needs this host to mount FUSE as porch does:
// /dev/fuse, and root for mount(2).
func needFUSE(t *testing.T) {
	if _, err := os.Stat("/dev/fuse"); err != nil {
		t.Skipf("no FUSE on this host: %v", err)
	}
	if os.Geteuid() != 0 {
		t.Skip("not root: porch's mounts need mount(2) or a fusermount helper")
	}
}

// readStep reads the folder in/ and the file one.csv of the lake with the
// given mode, writes what it read to joined and the mount table lines of
// its inputs to mounts, then runs then.
func readStep(step, mode, then string) RunCommandInput {
	data := func(name, typ, p string) plan.Input {
		return plan.Input{Name: name, Type: typ, Mode: mode, Value: plan.Value{Kind: plan.ValueData,
			Data: &plan.Data{Type: typ, Path: "azureml://datastores/lake/paths/" + p}}}
	}
	cmd := tmpl(txt("cat "), inRef("data"), txt("/a.txt "), inRef("data"), txt("/sub/b.txt "), inRef("file"), txt(" > "), outRef("out"),
		txt("/joined && { grep -F ' "), inRef("data"), txt(" ' /proc/self/mountinfo; grep -F \" $(dirname "), inRef("file"),
		txt(") \" /proc/self/mountinfo; } > "), outRef("out"), txt("/mounts; "+then))
	return RunCommandInput{Step: stepio.Step{RunID: "r1", StepPath: step, Command: plan.Command{Template: cmd},
		Inputs:  []plan.Input{data("data", "uri_folder", "in"), data("file", "uri_file", "one.csv")},
		Outputs: []plan.Output{{Name: "out", Type: "uri_folder"}}}}
}

// porchMountsUnder lists porch's mounts below dir.
func porchMountsUnder(t *testing.T, dir string) []string {
	points, err := lazyfs.Mounts()
	require.NoError(t, err)
	var under []string
	for _, p := range points {
		if strings.HasPrefix(p, dir+"/") {
			under = append(under, p)
		}
	}
	return under
}

func TestRoMountInputsOnS3AreMountedForTheCommand(t *testing.T) {
	needFUSE(t)
	a, _ := lakeWorker(t)
	res, err := a.RunCommand(context.Background(), readStep("read", "", "true"))
	require.NoError(t, err)
	out := res.Outputs[0].Path
	assert.Equal(t, "alpha\nbeta\nx,y\n", readFile(t, filepath.Join(out, "joined")))
	mounts := strings.Split(strings.TrimSpace(readFile(t, filepath.Join(out, "mounts"))), "\n")
	require.Len(t, mounts, 2, "both inputs were mounts while the command ran")
	for _, line := range mounts {
		assert.Contains(t, line, " - fuse.porch ")
	}
	log := readFile(t, filepath.Join(res.LogDir, "user_logs", "std_log.txt"))
	assert.Contains(t, log, `porch: input "data": "in" on datastore "lake" is mounted read-only at `)
	assert.Contains(t, log, filepath.Join(res.WorkDir, ".porch-inputs", "file", "one.csv"), "a single object is mounted as a folder holding it")
	assert.Empty(t, porchMountsUnder(t, a.Home), "the mounts are gone when the step ends")
}

func TestRoMountInputsAreUnmountedWhenTheCommandFails(t *testing.T) {
	needFUSE(t)
	a, _ := lakeWorker(t)
	_, err := a.RunCommand(context.Background(), readStep("fail", "ro_mount", "exit 3"))
	require.Error(t, err)
	assert.Equal(t, CommandFailedType, appError(t, err).Type())
	assert.Empty(t, porchMountsUnder(t, a.Home))
}

func TestRoMountInputsAreUnmountedWhenTheStepIsCancelled(t *testing.T) {
	needFUSE(t)
	a, _ := lakeWorker(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := a.RunCommand(ctx, readStep("cancel", "", "sleep 60"))
		done <- err
	}()
	// Waits for the command to have read its inputs through the mounts.
	// The attempt writes its output in staging until it succeeds.
	mounts := filepath.Join(a.Home, "datastores", plan.DefaultDatastore, "azureml", "r1", "cancel", ".porch-staging.out.r1.local.1", "mounts")
	require.Eventually(t, func() bool {
		info, err := os.Stat(mounts)
		return err == nil && info.Size() > 0
	}, time.Minute, 20*time.Millisecond)
	require.Len(t, porchMountsUnder(t, a.Home), 2)
	cancel()
	select {
	case err := <-done:
		require.ErrorIs(t, err, context.Canceled)
	case <-time.After(time.Minute):
		t.Fatal("the step did not stop within a minute of its cancellation")
	}
	assert.Empty(t, porchMountsUnder(t, a.Home))
}

// A mount an earlier attempt left behind (its worker died before
// unmounting) does not stop the next attempt from clearing the folder.
func TestANewAttemptDetachesAStaleMount(t *testing.T) {
	needFUSE(t)
	a, lake := lakeWorker(t)
	s, err := objectstore.Open(lake)
	require.NoError(t, err)
	stale := filepath.Join(a.Home, "work", "r1", "again", ".porch-inputs", "data")
	m, err := lazyfs.Mount(context.Background(), s, "in", stale, lazyfs.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = m.Unmount() })
	require.Equal(t, []string{stale}, porchMountsUnder(t, a.Home))

	res, err := a.RunCommand(context.Background(), readStep("again", "", "true"))
	require.NoError(t, err)
	assert.Equal(t, "alpha\nbeta\nx,y\n", readFile(t, filepath.Join(res.Outputs[0].Path, "joined")))
	assert.Empty(t, porchMountsUnder(t, a.Home))
}

// Where the worker cannot mount, ro_mount inputs are downloaded and the
// step's log says so once.
func TestRoMountFallsBackToDownloadWithoutFUSE(t *testing.T) {
	a, _ := lakeWorker(t)
	a.DisableMounts = true
	res, err := a.RunCommand(context.Background(), readStep("copy", "", "true"))
	require.NoError(t, err)
	out := res.Outputs[0].Path
	assert.Equal(t, "alpha\nbeta\nx,y\n", readFile(t, filepath.Join(out, "joined")))
	assert.Empty(t, strings.TrimSpace(readFile(t, filepath.Join(out, "mounts"))), "nothing was mounted")
	log := readFile(t, filepath.Join(res.LogDir, "user_logs", "std_log.txt"))
	assert.Equal(t, 1, strings.Count(log, "inputs on object storage are downloaded into the working folder"), "said once:\n%s", log)
}

func TestDownloadAndDirectInputsOnS3(t *testing.T) {
	a, lake := lakeWorker(t)
	res, err := a.RunCommand(context.Background(), readStep("download", "download", "true"))
	require.NoError(t, err)
	assert.Equal(t, "alpha\nbeta\nx,y\n", readFile(t, filepath.Join(res.Outputs[0].Path, "joined")))
	assert.Empty(t, strings.TrimSpace(readFile(t, filepath.Join(res.Outputs[0].Path, "mounts"))), "download copies")

	in := RunCommandInput{Step: stepio.Step{RunID: "r1", StepPath: "direct",
		Command: plan.Command{Template: tmpl(txt("echo "), inRef("data"), txt(" > "), outRef("out"), txt("/uri"))},
		Inputs: []plan.Input{{Name: "data", Type: "uri_folder", Mode: "direct", Value: plan.Value{Kind: plan.ValueData,
			Data: &plan.Data{Type: "uri_folder", Path: "azureml://datastores/lake/paths/in/"}}}},
		Outputs: []plan.Output{{Name: "out", Type: "uri_folder"}}}}
	res, err = a.RunCommand(context.Background(), in)
	require.NoError(t, err)
	assert.Equal(t, "s3://"+lake.Bucket+"/porch/in\n", readFile(t, filepath.Join(res.Outputs[0].Path, "uri")))
}

func TestInputMode(t *testing.T) {
	data := func(binding, data string) plan.Input {
		return plan.Input{Name: "x", Mode: binding, Value: plan.Value{Kind: plan.ValueData, Data: &plan.Data{Mode: data}}}
	}
	for _, c := range []struct{ binding, data, want string }{
		{"", "", stepio.ReadMount},
		{"", "upload", stepio.ReadMount}, // a producing step's output mode says nothing about reading
		{"", "rw_mount", stepio.ReadMount},
		{"", "download", stepio.ReadDownload},
		{"download", "upload", stepio.ReadDownload},
		{"eval_download", "", stepio.ReadDownload},
		{"mount", "", stepio.ReadMount},
		{"eval_mount", "", stepio.ReadMount},
		{"direct", "", stepio.ReadDirect},
		{"ro_mount", "download", stepio.ReadMount},
	} {
		got, err := stepio.InputMode("s", data(c.binding, c.data))
		require.NoError(t, err, "%+v", c)
		assert.Equal(t, c.want, got, "%+v", c)
	}
	_, err := stepio.InputMode("s", data("rw_mount", ""))
	require.ErrorContains(t, err, `step "s": input "x" has mode "rw_mount", which is no input mode: use ro_mount (the default), download or direct`)
}
