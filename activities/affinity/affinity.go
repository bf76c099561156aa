// Package affinity starts processes pinned to some of the host's cores
// (sched_setaffinity), so an instance's processes stay within its
// instance type's CPU limit.
package affinity

import (
	"fmt"
	"os/exec"
	"runtime"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Start starts cmd on cpus only; with none, on any core. A child inherits
// the affinity of the thread that forks it, so the fork runs on a thread
// pinned for it, whose own cores are given back after. The thread must not
// end: a process started earlier from it with a parent-death signal (a
// test's storage server, a fleet's node) would be killed with it. Only
// when its cores cannot be given back does the runtime discard it.
func Start(cmd *exec.Cmd, cpus []int) error {
	if len(cpus) == 0 {
		return cmd.Start()
	}
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		var was unix.CPUSet
		if err := unix.SchedGetaffinity(0, &was); err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("read this thread's cores: %w", err)
			return
		}
		var set unix.CPUSet
		for _, c := range cpus {
			set.Set(c)
		}
		if err := unix.SchedSetaffinity(0, &set); err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("pin to cores %s: %w", Format(cpus), err)
			return
		}
		errc <- cmd.Start()
		if unix.SchedSetaffinity(0, &was) == nil {
			runtime.UnlockOSThread()
		}
	}()
	return <-errc
}

// Cores are the cores this process may run on.
func Cores() []int {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		ids := make([]int, runtime.NumCPU())
		for i := range ids {
			ids[i] = i
		}
		return ids
	}
	var ids []int
	for c := 0; len(ids) < set.Count(); c++ {
		if set.IsSet(c) {
			ids = append(ids, c)
		}
	}
	return ids
}

// Format writes cores as CUDA_VISIBLE_DEVICES and taskset do: "0,2,3".
func Format(ids []int) string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = strconv.Itoa(id)
	}
	return strings.Join(s, ",")
}
