package reuse

import (
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/testsuite"
)

// TestDecideReuseHeartbeatsWhileItHashes decides a step whose input is a
// large file never hashed before: the decision heartbeats while it reads
// it, so a worker that dies mid-hash is known within the step's
// heartbeat timeout rather than after the decision's start-to-close.
func TestDecideReuseHeartbeatsWhileItHashes(t *testing.T) {
	f := newFixture(t)
	f.a.Host.HeartbeatInterval = 20 * time.Millisecond
	// A sparse gigabyte: reading it takes well over a beat, and no disk.
	big := filepath.Join(f.data, "big.bin")
	require.NoError(t, os.WriteFile(big, nil, 0o644))
	require.NoError(t, os.Truncate(big, 1<<30))

	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestActivityEnvironment()
	env.RegisterActivityWithOptions(f.a.DecideReuse, activity.RegisterOptions{Name: DecideReuseName})
	var beats atomic.Int32
	env.SetOnActivityHeartbeatListener(func(*activity.Info, converter.EncodedValues) { beats.Add(1) })
	started := time.Now()
	v, err := env.ExecuteActivity(DecideReuseName, f.input("run1"))
	require.NoError(t, err)
	var d Decision
	require.NoError(t, v.Get(&d))
	assert.Equal(t, ReasonFirstRun, d.Reason)
	t.Logf("hashed 1 GiB in %s with %d heartbeats", time.Since(started).Round(time.Millisecond), beats.Load())
	assert.Positive(t, beats.Load(), "the decision heartbeats while it hashes")
}
