package cli

import (
	"context"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/porch-pipelines/porch/internal/devserver"
	"github.com/porch-pipelines/porch/workflows"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestAWorkerStartedBeforeItsServerWaitsForIt starts `porch worker`
// against an address where no server listens yet: it says so and keeps
// trying, alive (/healthz) but not ready (/readyz), and once a server
// starts there it polls and runs a pipeline without a restart.
func TestAWorkerStartedBeforeItsServerWaitsForIt(t *testing.T) {
	dir := t.TempDir()
	t.Setenv(envHome, filepath.Join(dir, "home"))
	t.Setenv(envAddress, "")
	address := freeAddress(t)
	metricsAddr := freeAddress(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	var wout, werr syncBuffer
	workerDone := make(chan int, 1)
	go func() {
		workerDone <- Run(ctx, []string{"worker", "--address", address, "--metrics-address", metricsAddr},
			strings.NewReader(""), &wout, &werr)
	}()
	base := "http://" + metricsAddr
	require.Eventually(t, func() bool { return strings.Contains(werr.String(), "trying again in") }, 60*time.Second, 100*time.Millisecond,
		"the worker never said it would try again; stdout:\n%s\nstderr:\n%s", &wout, &werr)
	assert.Contains(t, werr.String(), "porch worker: cannot reach the temporal server at "+address)
	assert.Equal(t, http.StatusOK, status(base+"/healthz"))
	assert.Equal(t, http.StatusServiceUnavailable, status(base+"/readyz"))
	select {
	case code := <-workerDone:
		t.Fatalf("the worker exited (%d) instead of waiting; stderr:\n%s", code, &werr)
	default:
	}

	_, portText, err := net.SplitHostPort(address)
	require.NoError(t, err)
	port, err := strconv.Atoi(portText)
	require.NoError(t, err)
	srv, err := devserver.Start(ctx, devserver.Options{Port: port, Namespace: defaultNamespace, SearchAttributes: workflows.SearchAttributes()})
	require.NoError(t, err)
	defer srv.Stop()
	require.Equal(t, address, srv.FrontendAddress())
	// The wait between tries doubles up to 30 s; a few tries have passed.
	require.Eventually(t, func() bool { return status(base+"/readyz") == http.StatusOK }, 45*time.Second, 100*time.Millisecond,
		"readyz never 200 once the server started; stdout:\n%s\nstderr:\n%s", &wout, &werr)

	file := filepath.Join(dir, "pipeline.yml")
	require.NoError(t, os.WriteFile(file, []byte(`$schema: https://azuremlschemas.azureedge.net/latest/pipelineJob.schema.json
type: pipeline
jobs:
  hello:
    type: command
    command: echo hello
`), 0o644))
	var out, errOut syncBuffer
	code := Run(ctx, []string{"run", "--address", address, file}, strings.NewReader(""), &out, &errOut)
	require.Equal(t, 0, code, "stdout:\n%s\nstderr:\n%s", &out, &errOut)
	cancel()
	select {
	case code := <-workerDone:
		assert.Equal(t, 0, code, "worker stderr:\n%s", &werr)
	case <-time.After(60 * time.Second):
		t.Fatal("the worker did not stop")
	}
}

// TestAWorkerRefusedByItsServerStops points `porch worker --tls` at a
// server without TLS: waiting would not fix that, so it stops at once
// and says why.
func TestAWorkerRefusedByItsServerStops(t *testing.T) {
	dir := t.TempDir()
	t.Setenv(envHome, filepath.Join(dir, "home"))
	t.Setenv(envAddress, "")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	srv, err := devserver.Start(ctx, devserver.Options{Namespace: defaultNamespace, SearchAttributes: workflows.SearchAttributes()})
	require.NoError(t, err)
	defer srv.Stop()

	var out, errOut syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- Run(ctx, []string{"worker", "--address", srv.FrontendAddress(), "--tls"}, strings.NewReader(""), &out, &errOut)
	}()
	select {
	case code := <-done:
		assert.NotEqual(t, 0, code)
		assert.Contains(t, errOut.String(), "cannot connect to the temporal server at "+srv.FrontendAddress())
		assert.NotContains(t, errOut.String(), "trying again")
	case <-time.After(30 * time.Second):
		t.Fatalf("the worker kept going with TLS settings the server cannot answer; stderr:\n%s", &errOut)
	}
}
