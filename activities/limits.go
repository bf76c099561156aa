package activities

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/porch-pipelines/porch/activities/affinity"
	"github.com/porch-pipelines/porch/compiler/plan"
)

// Instance limits. A step that comes from an instance type's task queue
// runs each of its instances within the type's limits, as a Kubernetes
// container would:
//
//   - CPU: the instance's processes are pinned (sched_setaffinity) to
//     ceil(limits.cpu) of the worker's cores, the least used first, and
//     OMP_NUM_THREADS and its friends say how many threads each process
//     should use.
//   - Memory: porch samples the resident memory of the instance's process
//     groups every memorySampleInterval and kills them all (SIGKILL, exit
//     code 137) when it exceeds limits.memory, like Kubernetes' OOMKilled.
//     A sampler, not a cgroup: it needs no delegated cgroup v2 controller,
//     which workers in containers and on hosts with cgroup v1 lack. A
//     process that leaves its process group (setsid) escapes it.
//   - GPU: CUDA_VISIBLE_DEVICES names the GPUs the instance holds, when
//     the worker has GPUs.

// memorySampleInterval is how often the memory of running instances is
// sampled: one scan of /proc, about 0.2 ms on a host running 100 processes.
const memorySampleInterval = 100 * time.Millisecond

// threadVariables are the variables numerical libraries read for their
// thread count.
var threadVariables = []string{"OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "NUMEXPR_NUM_THREADS", "VECLIB_MAXIMUM_THREADS"}

// MemoryLimitExitCode is the exit code porch reports for an instance it
// killed above its memory limit: 128+SIGKILL, as Kubernetes reports
// OOMKilled.
const MemoryLimitExitCode = 137

// deviceSet hands out numbered devices (cores, GPUs) to instances, the
// least used first and then the lowest, so instances spread over them.
type deviceSet struct {
	mu    sync.Mutex
	ids   []int
	users []int
}

func newDeviceSet(ids []int) *deviceSet {
	return &deviceSet{ids: ids, users: make([]int, len(ids))}
}

// take gives n devices (at most all of them) and a function that gives
// them back.
func (s *deviceSet) take(n int) ([]int, func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	order := make([]int, len(s.ids))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return s.users[a] - s.users[b] })
	order = order[:min(n, len(order))]
	slices.Sort(order)
	ids := make([]int, len(order))
	for k, i := range order {
		s.users[i]++
		ids[k] = s.ids[i]
	}
	return ids, func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		for _, i := range order {
			s.users[i]--
		}
	}
}

func (a *Activities) devices() (cores, gpus *deviceSet) {
	a.devicesOnce.Do(func() {
		a.cores = newDeviceSet(affinity.Cores())
		ids := make([]int, max(a.GPUs, 0))
		for i := range ids {
			ids[i] = i
		}
		a.gpus = newDeviceSet(ids)
	})
	return a.cores, a.gpus
}

// instanceType is the instance type whose task queue a step came from;
// false for a queue without one (the default queue, an amlcompute's).
func (a *Activities) instanceType(queue string) (plan.InstanceType, bool) {
	t, ok := a.InstanceTypes[queue]
	return t, ok
}

// instance is one instance of a step on this host, within its type's
// limits.
type instance struct {
	cpus []int
	gpus []int
	// env is what every process of the instance gets: thread counts and
	// visible GPUs.
	env   []string
	guard *memoryGuard
}

// limitStep gives the instances of a command step its instance type's
// limits: the type of the step's queue, or of the queue the activity came
// from (a step spread over workers runs on their nodes' queues). A step
// of neither runs unlimited.
func (a *Activities) limitStep(ctx context.Context, in RunCommandInput, procs []process) limitedInstances {
	none := limitedInstances{release: func() {}}
	t, ok := a.instanceType(in.Command.Resources.TaskQueue)
	if !ok && activity.IsActivity(ctx) {
		t, ok = a.instanceType(activity.GetInfo(ctx).TaskQueue)
	}
	if !ok {
		return none
	}
	per := map[int]int{}
	n := 0
	for _, p := range procs {
		per[p.instance]++
		n = max(n, p.instance+1)
	}
	most := 0
	for _, c := range per {
		most = max(most, c)
	}
	return a.limitInstances(t, n, most, in.Command.EnvironmentVariables)
}

// limitEntryScripts gives the entry-script processes of a parallel step on
// this node one instance of its type: its cores (ceil(limits.cpu)), thread
// counts of cores/perInstance, and its GPUs. A step from a queue without
// an instance type runs unlimited. Memory is not watched here: an
// entry-script process outlives its mini-batches.
func (a *Activities) limitEntryScripts(p plan.Parallel, perInstance int) (cpus []int, env []string, note string, release func()) {
	t, ok := a.instanceType(p.Resources.TaskQueue)
	if !ok {
		return nil, nil, "", func() {}
	}
	l := a.limitInstances(t, 1, perInstance, p.EnvironmentVariables)
	in := l.instances[0]
	return in.cpus, in.env, l.notes[0], l.release
}

// limitedInstances are a step's instances on this host and what they
// hold.
type limitedInstances struct {
	instances []instance
	notes     []string
	release   func()
}

// limitInstances gives each of n instances of a step of type t (perProcs
// processes each) its cores and GPUs. userEnv are the step's own
// variables, which win over porch's thread counts.
func (a *Activities) limitInstances(t plan.InstanceType, n, perProcs int, userEnv map[string]string) limitedInstances {
	cores, gpus := a.devices()
	out := limitedInstances{instances: make([]instance, n)}
	var releases []func()
	for i := range out.instances {
		in := &out.instances[i]
		var cpuNote string
		if t.Limits.MilliCPU > 0 {
			var give func()
			in.cpus, give = cores.take(int((t.Limits.MilliCPU + 999) / 1000))
			releases = append(releases, give)
			threads := strconv.Itoa(max(1, len(in.cpus)/max(perProcs, 1)))
			for _, v := range threadVariables {
				if _, set := userEnv[v]; !set {
					in.env = append(in.env, v+"="+threads)
				}
			}
			cpuNote = fmt.Sprintf("CPU %s on cores %s (%s threads a process)", plan.FormatCPU(t.Limits.MilliCPU), formatIDs(in.cpus), threads)
		} else {
			cpuNote = "no CPU limit"
		}
		gpuNote := ""
		if a.GPUs > 0 {
			var give func()
			in.gpus, give = gpus.take(int(t.Limits.GPU))
			releases = append(releases, give)
			in.env = append(in.env, "CUDA_VISIBLE_DEVICES="+affinity.Format(in.gpus))
			gpuNote = ", GPUs " + formatIDs(in.gpus)
		}
		memNote := "no memory limit"
		if t.Limits.MemoryBytes > 0 {
			in.guard = &memoryGuard{limit: t.Limits.MemoryBytes}
			memNote = "memory " + plan.FormatMemory(t.Limits.MemoryBytes) + " (porch kills the instance above it)"
		}
		out.notes = append(out.notes, fmt.Sprintf("porch: instance %d runs within instance type %q's limits: %s, %s%s", i, t.Name, cpuNote, memNote, gpuNote))
	}
	out.release = func() {
		for _, r := range releases {
			r()
		}
	}
	return out
}

func formatIDs(ids []int) string {
	if len(ids) == 0 {
		return "none"
	}
	return affinity.Format(ids)
}

// guards are the instances' memory guards, nil ones left out.
func (l limitedInstances) guards() []*memoryGuard {
	var out []*memoryGuard
	for _, in := range l.instances {
		if in.guard != nil {
			out = append(out, in.guard)
		}
	}
	return out
}

// apply puts each process within its instance's limits.
func (l limitedInstances) apply(specs []procSpec, procs []process) {
	if len(l.instances) == 0 {
		return
	}
	for i := range specs {
		in := l.instances[min(procs[i].instance, len(l.instances)-1)]
		specs[i].cpus = in.cpus
		specs[i].env = slices.Concat(specs[i].env, in.env)
		if in.guard != nil {
			specs[i].started = in.guard.add
		}
	}
}

// memoryGuard watches the resident memory of one instance's process
// groups against its limit.
type memoryGuard struct {
	limit int64
	mu    sync.Mutex
	// groups are the process group ids of the instance's processes.
	groups   []int
	peak     int64
	exceeded bool
}

func (g *memoryGuard) add(pgid int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.groups = append(g.groups, pgid)
}

// observe records a sample; above the limit it kills every group of the
// instance.
func (g *memoryGuard) observe(used int64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.peak = max(g.peak, used)
	if used <= g.limit || g.exceeded {
		return
	}
	g.exceeded = true
	for _, pgid := range g.groups {
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
	}
}

func (g *memoryGuard) owns(pgrp int) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Contains(g.groups, pgrp)
}

// watchMemory samples the guards' processes every interval, one scan of
// /proc for all of them, until stop is called.
func watchMemory(guards []*memoryGuard, interval time.Duration) (stop func()) {
	if len(guards) == 0 {
		return func() {}
	}
	done, finished := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(finished)
		tick := time.NewTicker(interval)
		defer tick.Stop()
		page := int64(os.Getpagesize())
		buf := make([]byte, 1024)
		for {
			select {
			case <-done:
				return
			case <-tick.C:
			}
			used := make([]int64, len(guards))
			entries, err := os.ReadDir("/proc")
			if err != nil {
				continue
			}
			for _, e := range entries {
				pid, err := strconv.Atoi(e.Name())
				if err != nil {
					continue
				}
				st, ok := readProcStat(pid, buf)
				if !ok || !st.live() {
					continue
				}
				for i, g := range guards {
					if g.owns(st.pgrp) {
						used[i] += st.rssPages * page
					}
				}
			}
			for i, g := range guards {
				g.observe(used[i])
			}
		}
	}()
	return func() {
		close(done)
		<-finished
	}
}

// memoryExceeded is the step's error when porch killed an instance above
// its memory limit, nil otherwise.
func (r stepRun) memoryExceeded(l limitedInstances, specs []procSpec) error {
	for i, in := range l.instances {
		g := in.guard
		if g == nil || !g.exceeded {
			continue
		}
		desc := fmt.Sprintf("instance %d exceeded the instance type's memory limit %s (peak %s): porch killed its processes (exit code %d, as Kubernetes' OOMKilled); "+
			"use less memory or choose an instance type with a larger memory limit", i, plan.FormatMemory(g.limit), approxMemory(g.peak), MemoryLimitExitCode)
		_ = appendLog(r.mainLog(), "porch: "+desc)
		return temporal.NewNonRetryableApplicationError(desc, CommandFailedType, nil,
			CommandFailure{ExitCode: MemoryLimitExitCode, LogFile: specs[0].log, Attempt: r.attempt})
	}
	return nil
}

// approxMemory writes bytes with one decimal in the largest binary unit
// below them: "2.3Gi", "512.0Mi".
func approxMemory(b int64) string {
	for _, u := range []struct {
		suffix string
		shift  uint
	}{{"Ti", 40}, {"Gi", 30}, {"Mi", 20}, {"Ki", 10}} {
		if b >= 1<<u.shift {
			return strconv.FormatFloat(float64(b)/float64(int64(1)<<u.shift), 'f', 1, 64) + u.suffix
		}
	}
	return strconv.FormatInt(b, 10)
}
