package cli

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"

	"github.com/porch-pipelines/porch/internal/devserver"
	"github.com/porch-pipelines/porch/workflows"
)

// TestStartWaitsForAttributes checks the submission's answer to a server
// that refuses porch's search attributes: where it lists them (registered
// a moment ago, its services' namespace cache not refreshed yet: a setup
// script then its first run, as docs/temporal-cluster.md does, failed so
// on a loaded machine) the start is tried again until it is taken; where
// it does not, or for any other error, the error comes back at once.
func TestStartWaitsForAttributes(t *testing.T) {
	refused := serviceerror.NewInvalidArgument("Namespace default has no mapping defined for search attribute PorchUser")
	for _, c := range []struct {
		name       string
		attributes bool
		err        error
		wantCalls  int
	}{
		{"registered", true, refused, 3},
		{"not registered", false, refused, 1},
		{"another error", true, errors.New("boom"), 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			opts := devserver.Options{Namespace: defaultNamespace}
			if c.attributes {
				opts.SearchAttributes = workflows.SearchAttributes()
			}
			srv, err := devserver.Start(t.Context(), opts)
			require.NoError(t, err)
			defer srv.Stop()
			cl, err := client.Dial(client.Options{HostPort: srv.FrontendAddress(), Namespace: defaultNamespace, Logger: sdkLogger(io.Discard, slog.LevelError)})
			require.NoError(t, err)
			defer cl.Close()
			calls := 0
			start := func() (client.WorkflowRun, error) {
				calls++
				if calls < 3 {
					return nil, c.err
				}
				return nil, nil
			}
			began := time.Now()
			_, err = startWhenAttributesTaken(context.Background(), cl, defaultNamespace, start)
			assert.Equal(t, c.wantCalls, calls)
			if c.wantCalls == 3 {
				assert.NoError(t, err)
			} else {
				assert.Equal(t, c.err, err)
				assert.Less(t, time.Since(began), 5*time.Second, "no wait")
			}
		})
	}
}
