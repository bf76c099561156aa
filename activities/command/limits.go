package command

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/porch-pipelines/porch/activities/launch"
	"github.com/porch-pipelines/porch/activities/limits"
	"github.com/porch-pipelines/porch/activities/stepio"
	"github.com/porch-pipelines/porch/compiler/plan"
)

// memorySampleInterval is how often the memory of running instances is
// sampled: one scan of /proc, about 0.2 ms on a host running 100 processes.
const memorySampleInterval = 100 * time.Millisecond

// MemoryLimitExitCode is the exit code porch reports for an instance it
// killed above its memory limit: 128+SIGKILL, as Kubernetes reports
// OOMKilled.
const MemoryLimitExitCode = 137

// stepLimits are a command step's instances on this host within their
// type's limits, with a memory guard for each instance whose type has a
// memory limit.
type stepLimits struct {
	limits.Set
	// guards[i] watches instance i's memory; nil without a limit.
	guards []*memoryGuard
}

// limitStep gives the instances of a command step its instance type's
// limits: the type of the step's queue, or of the queue the activity came
// from (a step spread over workers runs on their nodes' queues). A step
// of neither runs unlimited.
func (a *Activities) limitStep(ctx context.Context, in RunCommandInput, procs []process) stepLimits {
	none := stepLimits{Set: limits.Set{Release: func() {}}}
	d := a.Devices
	t, ok := d.InstanceType(in.Command.Resources.TaskQueue)
	if !ok && activity.IsActivity(ctx) {
		t, ok = d.InstanceType(activity.GetInfo(ctx).TaskQueue)
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
	l := stepLimits{Set: d.LimitInstances(t, n, most, in.Command.EnvironmentVariables)}
	l.guards = make([]*memoryGuard, len(l.Instances))
	for i, in := range l.Instances {
		if in.Memory > 0 {
			l.guards[i] = &memoryGuard{limit: in.Memory}
		}
	}
	return l
}

// watched are the instances' memory guards, nil ones left out.
func (l stepLimits) watched() []*memoryGuard {
	var out []*memoryGuard
	for _, g := range l.guards {
		if g != nil {
			out = append(out, g)
		}
	}
	return out
}

// apply puts each process within its instance's limits.
func (l stepLimits) apply(specs []procSpec, procs []process) {
	if len(l.Instances) == 0 {
		return
	}
	for i := range specs {
		k := min(procs[i].instance, len(l.Instances)-1)
		in := l.Instances[k]
		specs[i].cpus = in.CPUs
		specs[i].env = slices.Concat(specs[i].env, in.Env)
		if c := specs[i].container; c != nil {
			// The container's own GPUs are all it sees, numbered from 0.
			c.CPUs, c.GPUs, c.Memory = in.CPUs, in.GPUs(), in.Memory
			c.Env = slices.Concat(c.Env, slices.DeleteFunc(slices.Clone(in.Env), func(kv string) bool {
				return strings.HasPrefix(kv, "CUDA_VISIBLE_DEVICES=")
			}))
		}
		if g := l.guards[k]; g != nil {
			specs[i].started = g.add
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
			pids, err := launch.PIDs()
			if err != nil {
				continue
			}
			for _, pid := range pids {
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
func (r stepRun) memoryExceeded(l stepLimits, specs []procSpec) error {
	for i, g := range l.guards {
		if g == nil || !g.exceeded {
			continue
		}
		desc := fmt.Sprintf("instance %d exceeded the instance type's memory limit %s (peak %s): porch killed its processes (exit code %d, as Kubernetes' OOMKilled); "+
			"use less memory or choose an instance type with a larger memory limit", i, plan.FormatMemory(g.limit), approxMemory(g.peak), MemoryLimitExitCode)
		_ = stepio.AppendLog(r.mainLog(), "porch: "+desc)
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
