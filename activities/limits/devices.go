package limits

import (
	"fmt"
	"slices"
	"strconv"
	"sync"

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
//     groups and kills them all (SIGKILL, exit code 137) when it exceeds
//     limits.memory, like Kubernetes' OOMKilled. A sampler, not a cgroup:
//     it needs no delegated cgroup v2 controller, which workers in
//     containers and on hosts with cgroup v1 lack. A process that leaves
//     its process group (setsid) escapes it.
//   - GPU: CUDA_VISIBLE_DEVICES names the GPUs the instance holds, when
//     the worker has GPUs.

// Devices are the cores and GPUs of one worker, handed out to the
// instances of steps from its instance types' queues.
type Devices struct {
	// types are the instance types of the worker's task queues, by queue.
	types map[string]plan.InstanceType
	// gpuCount is how many GPUs the worker offers.
	gpuCount int64

	once        sync.Once
	cores, gpus *deviceSet
}

// NewDevices returns the devices of a worker serving the queues of types
// with gpus GPUs.
func NewDevices(types map[string]plan.InstanceType, gpus int64) *Devices {
	return &Devices{types: types, gpuCount: gpus}
}

// threadVariables are the variables numerical libraries read for their
// thread count.
var threadVariables = []string{"OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "NUMEXPR_NUM_THREADS", "VECLIB_MAXIMUM_THREADS"}

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

func (d *Devices) sets() (cores, gpus *deviceSet) {
	d.once.Do(func() {
		d.cores = newDeviceSet(affinity.Cores())
		ids := make([]int, max(d.gpuCount, 0))
		for i := range ids {
			ids[i] = i
		}
		d.gpus = newDeviceSet(ids)
	})
	return d.cores, d.gpus
}

// InstanceType is the instance type whose task queue a step came from;
// false for a queue without one (the default queue, an amlcompute's), and
// for every queue of nil Devices (a worker without instance types).
func (d *Devices) InstanceType(queue string) (plan.InstanceType, bool) {
	if d == nil {
		return plan.InstanceType{}, false
	}
	t, ok := d.types[queue]
	return t, ok
}

// Instance is one instance of a step on this host, within its type's
// limits.
type Instance struct {
	CPUs []int
	gpus []int
	// Env is what every process of the instance gets: thread counts and
	// visible GPUs.
	Env []string
	// Memory is the instance type's memory limit in bytes, 0 for none.
	Memory int64
}

// GPUs are the instance's GPUs, as the worker numbers them.
func (in Instance) GPUs() []int { return in.gpus }

// LimitEntryScripts gives the entry-script processes of a parallel step on
// this node one instance of its type: its cores (ceil(limits.cpu)), thread
// counts of cores/perInstance, and its GPUs. A step from a queue without
// an instance type runs unlimited. Memory is not watched here: an
// entry-script process outlives its mini-batches.
func (d *Devices) LimitEntryScripts(p plan.Parallel, perInstance int) (cpus []int, env []string, note string, release func()) {
	t, ok := d.InstanceType(p.Resources.TaskQueue)
	if !ok {
		return nil, nil, "", func() {}
	}
	l := d.LimitInstances(t, 1, perInstance, p.EnvironmentVariables)
	in := l.Instances[0]
	return in.CPUs, in.Env, l.Notes[0], l.Release
}

// Set is a step's instances on this host and what they hold.
type Set struct {
	Instances []Instance
	Notes     []string
	Release   func()
}

// LimitInstances gives each of n instances of a step of type t (perProcs
// processes each) its cores and GPUs. userEnv are the step's own
// variables, which win over porch's thread counts.
func (d *Devices) LimitInstances(t plan.InstanceType, n, perProcs int, userEnv map[string]string) Set {
	cores, gpus := d.sets()
	out := Set{Instances: make([]Instance, n)}
	var releases []func()
	for i := range out.Instances {
		in := &out.Instances[i]
		var cpuNote string
		if t.Limits.MilliCPU > 0 {
			var give func()
			in.CPUs, give = cores.take(int((t.Limits.MilliCPU + 999) / 1000))
			releases = append(releases, give)
			threads := strconv.Itoa(max(1, len(in.CPUs)/max(perProcs, 1)))
			for _, v := range threadVariables {
				if _, set := userEnv[v]; !set {
					in.Env = append(in.Env, v+"="+threads)
				}
			}
			cpuNote = fmt.Sprintf("CPU %s on cores %s (%s threads a process)", plan.FormatCPU(t.Limits.MilliCPU), formatIDs(in.CPUs), threads)
		} else {
			cpuNote = "no CPU limit"
		}
		gpuNote := ""
		if d.gpuCount > 0 {
			var give func()
			in.gpus, give = gpus.take(int(t.Limits.GPU))
			releases = append(releases, give)
			in.Env = append(in.Env, "CUDA_VISIBLE_DEVICES="+affinity.Format(in.gpus))
			gpuNote = ", GPUs " + formatIDs(in.gpus)
		}
		memNote := "no memory limit"
		if t.Limits.MemoryBytes > 0 {
			in.Memory = t.Limits.MemoryBytes
			memNote = "memory " + plan.FormatMemory(t.Limits.MemoryBytes) + " (porch kills the instance above it)"
		}
		out.Notes = append(out.Notes, fmt.Sprintf("porch: instance %d runs within instance type %q's limits: %s, %s%s", i, t.Name, cpuNote, memNote, gpuNote))
	}
	out.Release = func() {
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
