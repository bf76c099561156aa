package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"

	"github.com/porch-pipelines/porch/compiler/plan"
	"github.com/porch-pipelines/porch/internal/devserver"
	"github.com/porch-pipelines/porch/worker"
	"github.com/porch-pipelines/porch/workflows"
)

const catalogPipeline = `type: pipeline
inputs:
  data:
    path: azureml:iris@latest
jobs:
  train:
    component: azureml:train:1
    inputs:
      data: ${{parent.inputs.data}}
`

const registeredTrain = `type: command
name: train
inputs:
  data:
    type: uri_folder
code: ./src
command: ls ${{inputs.data}}
environment: azureml:AzureML-sklearn-1.0-ubuntu20.04-py38-cpu:1
`

// TestCompileWithServerCatalog registers a data asset and a component on a
// real server, then checks that validate and compile resolve them through
// its catalogue, and that without a server they are reported unregistered.
func TestCompileWithServerCatalog(t *testing.T) {
	ctx := context.Background()
	srv, err := devserver.Start(ctx, devserver.Options{})
	require.NoError(t, err)
	defer srv.Stop()
	c, err := client.DialContext(ctx, client.Options{HostPort: srv.FrontendAddress()})
	require.NoError(t, err)
	defer c.Close()
	dir := t.TempDir()
	w, err := worker.Start(c, worker.Options{Home: filepath.Join(dir, "worker"), Workflows: true})
	require.NoError(t, err)
	defer w.Stop()

	data := filepath.Join(dir, "iris")
	for _, e := range []workflows.CatalogEntry{
		{Data: &plan.Asset{Name: "iris", Version: "1", Type: "uri_folder", Path: data}},
		{Component: &plan.ComponentAsset{Name: "train", Version: "1", Source: registeredTrain, Dir: filepath.Join(dir, "registered")}},
	} {
		_, err := workflows.RegisterCatalogEntry(ctx, c, e)
		require.NoError(t, err)
	}
	t.Setenv(envHome, filepath.Join(dir, "home"))
	t.Setenv(envAddress, "")
	file := filepath.Join(dir, "p.yml")
	require.NoError(t, os.WriteFile(file, []byte(catalogPipeline), 0o644))

	var stdout, stderr bytes.Buffer
	code := Run(ctx, []string{"validate", "--address", srv.FrontendAddress(), file}, nil, &stdout, &stderr)
	require.Equal(t, ExitOK, code, stderr.String())
	assert.Equal(t, file+": ok (1 steps)\n", stdout.String())

	stdout.Reset()
	code = Run(ctx, []string{"compile", "--address", srv.FrontendAddress(), file}, nil, &stdout, &stderr)
	require.Equal(t, ExitOK, code, stderr.String())
	var p plan.Plan
	require.NoError(t, json.Unmarshal(stdout.Bytes(), &p))
	assert.Equal(t, &plan.Data{Type: "uri_folder", Path: data}, p.Pipeline.Inputs[0].Value.Data)
	assert.Equal(t, filepath.Join(dir, "registered", "src"), p.Pipeline.Steps[0].Command.Code)

	// No server known: the references are refused, with what to do.
	stdout.Reset()
	stderr.Reset()
	code = Run(ctx, []string{"validate", file}, nil, &stdout, &stderr)
	assert.Equal(t, ExitFailure, code)
	assert.Contains(t, stderr.String(), `p.yml:7:16: error: component "train" is not registered`)
	assert.Contains(t, stderr.String(), "register it with porch component create -f component.yml on the porch server you run against")

	// An unreachable server: a warning, then the same errors.
	stderr.Reset()
	code = Run(ctx, []string{"validate", "--address", "127.0.0.1:1", file}, nil, &stdout, &stderr)
	assert.Equal(t, ExitFailure, code)
	assert.Contains(t, stderr.String(), "porch: warning: azureml: references stay unresolved: cannot reach the temporal server at 127.0.0.1:1 (from --address)")
	assert.Contains(t, stderr.String(), `error: component "train" is not registered`)
}
