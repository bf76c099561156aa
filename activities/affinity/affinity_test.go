package affinity

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A process started with a parent-death signal dies when the thread that
// forked it ends. Pinned starts must not end the threads they borrow:
// the storage servers of the worker's tests died that way, mid-run.
func TestPinnedStartsLeaveEarlierChildrenRunning(t *testing.T) {
	cores := Cores()
	pinned := cores[:1]
	var sleepers []*exec.Cmd
	for i := 0; i < 20; i++ {
		s := exec.Command("sleep", "60")
		s.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		require.NoError(t, s.Start())
		sleepers = append(sleepers, s)
		t.Cleanup(func() { _ = s.Process.Kill(); _ = s.Wait() })

		c := exec.Command("grep", "^Cpus_allowed_list:", "/proc/self/status")
		var out strings.Builder
		c.Stdout = &out
		require.NoError(t, Start(c, pinned))
		require.NoError(t, c.Wait())
		assert.Equal(t, "Cpus_allowed_list:\t"+Format(pinned), strings.TrimSpace(out.String()),
			"the pinned process runs on its cores only")
	}
	time.Sleep(200 * time.Millisecond)
	for i, s := range sleepers {
		assert.NoError(t, s.Process.Signal(syscall.Signal(0)), "sleeper %d was killed", i)
		state, err := os.ReadFile("/proc/" + strconv.Itoa(s.Process.Pid) + "/stat")
		if assert.NoError(t, err) {
			fields := strings.Fields(string(state))
			assert.NotEqual(t, "Z", fields[2], "sleeper %d exited", i)
		}
	}
	assert.Equal(t, cores, Cores(), "this process's threads keep every core")
}
