package stepio

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/porch-pipelines/porch/compiler/plan"
)

// TestAStoppedInstallLeavesNoProcessBehind: a step stopped while its conda
// file installs on the host stops the whole install, pip included, not
// just the shell running it: a pip left running would write into the
// environment's folder while the next attempt clears and fills it.
func TestAStoppedInstallLeavesNoProcessBehind(t *testing.T) {
	h := &Host{Home: t.TempDir(), KillGrace: time.Second}
	py := h.Python().Exe
	if exec.Command(py, "-m", "venv", "--help").Run() != nil {
		t.Skipf("the worker's Python %s has no venv module", py)
	}
	// A package index that never answers: pip waits on it.
	asked := make(chan struct{}, 1)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case asked <- struct{}{}:
		default:
		}
		<-r.Context().Done()
	})}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
	t.Setenv("PIP_INDEX_URL", "http://"+l.Addr().String()+"/simple/")
	t.Setenv("PIP_TRUSTED_HOST", "127.0.0.1")

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	env := &plan.Environment{Conda: "dependencies:\n  - pip:\n    - never-served\n", CondaFile: "conda.yaml"}
	var log bytes.Buffer
	done := make(chan error, 1)
	go func() {
		_, err := h.HostEnvironment(ctx, env, &log)
		done <- err
	}()
	select {
	case <-asked:
	case err := <-done:
		t.Fatalf("the install ended before pip asked the index: %v\n%s", err, log.String())
	case <-time.After(2 * time.Minute):
		cancel()
		<-done // the install writes log until it returns
		t.Fatalf("pip did not ask the index within 2 minutes:\n%s", log.String())
	}
	require.NotEmpty(t, installing(h.Home), "pip runs")

	cancel()
	select {
	case err := <-done:
		assert.ErrorIs(t, err, context.Canceled)
	case <-time.After(30 * time.Second):
		t.Fatal("the install did not stop within 30 s of its step")
	}
	assert.Empty(t, installing(h.Home), "no process of the install runs on once it returned")
}

// installing lists the running processes whose command line names a
// path in home: the install's shell, and pip in the environment.
func installing(home string) []string {
	var found []string
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil || !bytes.Contains(b, []byte(home)) {
			continue
		}
		if st, err := os.ReadFile("/proc/" + e.Name() + "/stat"); err == nil {
			f := strings.Fields(string(st[bytes.LastIndexByte(st, ')')+1:]))
			if len(f) > 0 && (f[0] == "Z" || f[0] == "X") {
				continue
			}
		}
		found = append(found, e.Name()+": "+strings.ReplaceAll(string(b), "\x00", " "))
	}
	return found
}
