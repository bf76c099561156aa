package command

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/worker"
)

// TestRunCommandHeartbeatTimeoutSaysSo stops a running step the way the
// SDK does when its heartbeats cannot reach the server: it cancels the
// activity's context with the heartbeat call's error as the cause (a
// retryable gRPC error once the SDK gives up retrying it, or NotFound once
// the server has timed the attempt out). The step's error and its log say
// that heartbeats to the server timed out, not "context canceled".
func TestRunCommandHeartbeatTimeoutSaysSo(t *testing.T) {
	for name, cause := range map[string]error{
		"unreachable": serviceerror.NewUnavailable("connection refused"),
		"timed out":   serviceerror.NewNotFound("invalid activityID or activity already timed out or invoking workflow is completed"),
	} {
		t.Run(name, func(t *testing.T) {
			env, a := newEnv(t)
			a.KillGrace = 200 * time.Millisecond
			ctx, cancel := context.WithCancelCause(context.Background())
			defer cancel(nil)
			env.SetWorkerOptions(worker.Options{BackgroundActivityContext: ctx})
			file := filepath.Join(t.TempDir(), "pids")
			in := stepInput(tmpl(txt("sleep 300 & " + recordPids(file, "$$", "$!") + "; wait")))

			done := make(chan error, 1)
			go func() {
				_, err := runStep(env, in)
				done <- err
			}()
			// Waits for the command to have started and recorded its pids.
			require.Eventually(t, func() bool { _, err := os.Stat(file); return err == nil }, 30*time.Second, 10*time.Millisecond)
			cancel(cause)
			err := <-done
			require.ErrorContains(t, err, "heartbeats to the temporal server timed out")
			assert.NotContains(t, err.Error(), "context canceled")
			for _, pid := range readPids(t, file) {
				assert.False(t, alive(pid), "pid %d outlived the stopped step", pid)
			}
			log := readFile(t, filepath.Join(artifactsDir(a, in), "user_logs", "std_log.txt"))
			assert.Contains(t, log, "porch: the step was stopped (heartbeats to the temporal server timed out")
		})
	}
}

// TestRunCommandFailureBeforeStartIsLogged fails a step before its
// command starts (its code folder is gone): the step's std_log.txt, which
// porch names when the step fails, says why.
func TestRunCommandFailureBeforeStartIsLogged(t *testing.T) {
	env, a := newEnv(t)
	in := stepInput(tmpl(txt("true")))
	in.Command.Code = filepath.Join(t.TempDir(), "gone")
	_, err := runStep(env, in)
	require.Error(t, err)
	log := readFile(t, filepath.Join(artifactsDir(a, in), "user_logs", "std_log.txt"))
	assert.Regexp(t, `^porch: step "train" of run "run1", attempt 1, failed before its command started: code ".*/gone" does not exist on this worker: restore it or fix the step's code: path\n$`, log)
}
