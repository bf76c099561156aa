package worker

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"syscall"

	"github.com/porch-pipelines/porch/compiler/plan"
)

// spotQueue says whether the worker serves compute's steps as a
// preemptible worker: as --preemptible says, else when the compute is a
// low_priority amlcompute (all its nodes are spot VMs).
func (o Options) spotQueue(cat *plan.Catalog, compute string) bool {
	if o.Preemptible != nil {
		return *o.Preemptible
	}
	if cat == nil {
		return false
	}
	c, ok := cat.FindCompute(compute)
	return ok && c.Type == plan.ComputeAML && c.Tier == plan.TierLowPriority
}

// tierQueues are the variants of a compute's queues the worker serves: the
// spot ones for a preemptible worker, both for a worker standing in for
// every node (AnyNode: a run on a scratch server, where this machine is the
// whole cluster, spot VMs included).
func (o Options) tierQueues(cat *plan.Catalog, compute string, qs []queue) []queue {
	spot := make([]queue, len(qs))
	for i, q := range qs {
		q.name = plan.SpotTaskQueue(q.name)
		spot[i] = q
	}
	switch {
	case o.AnyNode:
		return append(qs, spot...)
	case o.spotQueue(cat, compute):
		return spot
	}
	return qs
}

// Preemptible says whether this worker serves spot queues: whether it
// stops with Preempt rather than Stop.
func (w *Worker) Preemptible() bool { return w.preemptible }

// Preempt stops the worker the way a reclaimed spot VM stops: at once. It
// closes the client, so that no running activity reports an end, then
// kills the process group of every process the worker started. The server
// sees the activities' heartbeats stop and schedules them again; a spot
// step's workflow counts that as a preemption. The caller exits next.
func (w *Worker) Preempt() {
	w.client.Close()
	killChildGroups()
}

// killChildGroups SIGKILLs the process group of each child of this
// process (steps run in groups of their own), or the child alone when it
// shares this process's group.
func killChildGroups() {
	self, own := os.Getpid(), syscall.Getpgrp()
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, f := range stats {
		ppid, pgrp, ok := readStat(f)
		if !ok || ppid != self {
			continue
		}
		if pgrp != own {
			_ = syscall.Kill(-pgrp, syscall.SIGKILL)
			continue
		}
		if pid, err := strconv.Atoi(filepath.Base(filepath.Dir(f))); err == nil {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// readStat reads the parent pid and process group of /proc/<pid>/stat.
// The command name may hold spaces and parentheses: fields are counted
// from its closing parenthesis.
func readStat(file string) (ppid, pgrp int, ok bool) {
	b, err := os.ReadFile(file)
	if err != nil {
		return 0, 0, false
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, 0, false
	}
	f := bytes.Fields(b[i+1:])
	if len(f) < 3 {
		return 0, 0, false
	}
	ppid, err1 := strconv.Atoi(string(f[1]))
	pgrp, err2 := strconv.Atoi(string(f[2]))
	return ppid, pgrp, err1 == nil && err2 == nil
}
