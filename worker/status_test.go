package worker

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestStatusFileCountsRunningActivities(t *testing.T) {
	path := filepath.Join(t.TempDir(), "fleet", "n1.json")
	before := time.Now().UTC()
	s, err := newStatusWriter(path, "n1")
	require.NoError(t, err)
	st, err := ReadNodeStatus(path)
	require.NoError(t, err)
	assert.Equal(t, NodeStatus{Node: "n1", PID: os.Getpid(), IdleSince: st.IdleSince}, st)
	assert.False(t, st.IdleSince.Before(before), "a new worker is idle since it started")

	s.add(1)
	s.add(1)
	s.add(-1)
	st, err = ReadNodeStatus(path)
	require.NoError(t, err)
	assert.Equal(t, 1, st.Running)
	assert.True(t, st.IdleSince.IsZero(), "a busy worker has no idle time")

	mid := time.Now().UTC()
	s.add(-1)
	st, err = ReadNodeStatus(path)
	require.NoError(t, err)
	assert.Equal(t, 0, st.Running)
	assert.False(t, st.IdleSince.Before(mid), "idle since its last activity ended")
}

func TestReadNodeStatusNamesABadFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "n1.json")
	require.NoError(t, os.WriteFile(path, []byte("{running"), 0o644))
	_, err := ReadNodeStatus(path)
	assert.ErrorContains(t, err, path)
}
