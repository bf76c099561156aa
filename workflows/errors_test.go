package workflows

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"
)

func TestErrorMessageIsTheInnermostCause(t *testing.T) {
	app := temporal.NewNonRetryableApplicationError("command exited with code 3", "CommandFailed", nil)
	wrapped := fmt.Errorf("child workflow execution error: %w", fmt.Errorf("activity error: %w", app))
	require.Equal(t, "command exited with code 3", ErrorMessage(wrapped))
	require.Equal(t, "canceled", ErrorMessage(fmt.Errorf("wrapper: %w", temporal.NewCanceledError())))
	require.Equal(t, "disk full", ErrorMessage(fmt.Errorf("run: %w", errors.New("disk full"))))
	require.Equal(t, "", ErrorMessage(nil))
}
