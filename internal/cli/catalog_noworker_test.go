package cli

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"

	"github.com/porch-pipelines/porch/internal/devserver"
	"github.com/porch-pipelines/porch/workflows"
)

// TestACatalogueChangeWithoutAWorkerChangesNothing checks issue 28 item 19:
// on a server where no worker runs porch's workflows, `porch compute
// create` fails at once, and nothing is queued that a worker starting later
// would apply (the catalogue workflow was never started).
func TestACatalogueChangeWithoutAWorkerChangesNothing(t *testing.T) {
	srv, err := devserver.Start(context.Background(), devserver.Options{})
	require.NoError(t, err)
	defer srv.Stop()
	dir := t.TempDir()
	t.Setenv(envHome, filepath.Join(dir, "home"))
	file := filepath.Join(dir, "steady.yml")
	require.NoError(t, os.WriteFile(file, []byte("name: steady\ntype: amlcompute\nmin_instances: 1\nmax_instances: 1\n"), 0o644))

	var stdout, stderr bytes.Buffer
	began := time.Now()
	code := Run(context.Background(), []string{"compute", "create", "--address", srv.FrontendAddress(), "-f", file}, nil, &stdout, &stderr)
	took := time.Since(began)
	assert.Equal(t, ExitFailure, code, stdout.String())
	assert.Contains(t, stderr.String(), "no worker runs porch's workflows on "+srv.FrontendAddress())
	assert.Contains(t, stderr.String(), "nothing was changed")
	t.Logf("refused in %s (the poller check's grace is %s, the catalogue's timeout %s)", took.Round(time.Millisecond), pollerGrace, catalogTimeout)

	c, err := client.Dial(client.Options{HostPort: srv.FrontendAddress()})
	require.NoError(t, err)
	defer c.Close()
	_, err = c.DescribeWorkflowExecution(context.Background(), workflows.CatalogWorkflowID, "")
	var nf *serviceerror.NotFound
	assert.True(t, errors.As(err, &nf), "the catalogue workflow exists, holding the change for a later worker: %v", err)
}
