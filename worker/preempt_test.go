package worker

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestReadStatFindsParentAndGroup(t *testing.T) {
	ppid, pgrp, ok := readStat("/proc/self/stat")
	require.True(t, ok)
	require.Equal(t, os.Getppid(), ppid)
	require.Equal(t, syscall.Getpgrp(), pgrp)
	_, _, ok = readStat("/proc/0/stat")
	require.False(t, ok)
}

// TestKillChildGroupsKillsAStepsWholeGroup: a child in a group of its own
// (as steps run) dies with its own children.
func TestKillChildGroupsKillsAStepsWholeGroup(t *testing.T) {
	cmd := exec.Command("/bin/sh", "-c", "sleep 600 & echo $!; wait")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	line, err := bufio.NewReader(out).ReadString('\n')
	require.NoError(t, err)
	sleeper, err := strconv.Atoi(strings.TrimSpace(line))
	require.NoError(t, err)

	killChildGroups()
	err = cmd.Wait()
	var exit *exec.ExitError
	require.True(t, errors.As(err, &exit), "%v", err)
	ws := exit.Sys().(syscall.WaitStatus)
	require.True(t, ws.Signaled())
	require.Equal(t, syscall.SIGKILL, ws.Signal())
	// Waits for the background sleep to be gone (or a zombie its new
	// parent has not reaped yet).
	require.Eventually(t, func() bool {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", sleeper))
		if err != nil {
			return true
		}
		i := bytes.LastIndexByte(b, ')')
		return i >= 0 && bytes.HasPrefix(bytes.TrimSpace(b[i+1:]), []byte("Z"))
	}, 10*time.Second, 10*time.Millisecond, "the background sleep dies with its group")
}
