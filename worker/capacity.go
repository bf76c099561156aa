package worker

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"sync"

	"github.com/shirou/gopsutil/v4/cpu"
	"github.com/shirou/gopsutil/v4/mem"
	sdkworker "go.temporal.io/sdk/worker"

	"github.com/porch-pipelines/porch/compiler/plan"
)

// DetectCapacity measures this machine: its logical cores, its total
// memory, and its NVIDIA GPUs (those nvidia-smi lists, 0 without it).
func DetectCapacity(ctx context.Context) (plan.ResourceList, error) {
	cores, err := cpu.CountsWithContext(ctx, true)
	if err != nil {
		return plan.ResourceList{}, fmt.Errorf("count CPU cores: %w (give --cpu)", err)
	}
	vm, err := mem.VirtualMemoryWithContext(ctx)
	if err != nil {
		return plan.ResourceList{}, fmt.Errorf("read total memory: %w (give --memory)", err)
	}
	return plan.ResourceList{MilliCPU: int64(cores) * 1000, MemoryBytes: int64(vm.Total), GPU: countGPUs(ctx)}, nil
}

// countGPUs counts the lines of nvidia-smi -L ("GPU 0: ..."); a machine
// without nvidia-smi, or where it fails, has none.
func countGPUs(ctx context.Context) int64 {
	path, err := exec.LookPath("nvidia-smi")
	if err != nil {
		return 0
	}
	out, err := exec.CommandContext(ctx, path, "-L").Output()
	if err != nil {
		return 0
	}
	var n int64
	for _, line := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(line, "GPU ") {
			n++
		}
	}
	return n
}

// fits says whether need fits in free.
func fits(need, free plan.ResourceList) bool {
	return need.MilliCPU <= free.MilliCPU && need.MemoryBytes <= free.MemoryBytes && need.GPU <= free.GPU
}

// FormatResources writes an amount as "2 CPUs, 4Gi, 0 GPUs".
func FormatResources(r plan.ResourceList) string {
	return fmt.Sprintf("%s CPU, %s memory, %d GPU", plan.FormatCPU(r.MilliCPU), plan.FormatMemory(r.MemoryBytes), r.GPU)
}

// capacityPool is a worker's capacity shared by every instance-type queue
// it serves: a running step holds its type's requests until it ends.
type capacityPool struct {
	mu    sync.Mutex
	total plan.ResourceList
	free  plan.ResourceList
	// changed is closed (and replaced) whenever capacity is released, to
	// wake reservations waiting for it.
	changed chan struct{}
}

func newCapacityPool(total plan.ResourceList) *capacityPool {
	return &capacityPool{total: total, free: total, changed: make(chan struct{})}
}

// tryReserve takes need from the pool if it fits now.
func (p *capacityPool) tryReserve(need plan.ResourceList) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !fits(need, p.free) {
		return false
	}
	p.free.MilliCPU -= need.MilliCPU
	p.free.MemoryBytes -= need.MemoryBytes
	p.free.GPU -= need.GPU
	return true
}

// reserve waits until need fits, then takes it. It fails only when ctx
// ends; need must fit in the total (the worker refuses types that do not).
func (p *capacityPool) reserve(ctx context.Context, need plan.ResourceList) error {
	for {
		p.mu.Lock()
		changed := p.changed
		p.mu.Unlock()
		if p.tryReserve(need) {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// release gives need back and wakes waiting reservations.
func (p *capacityPool) release(need plan.ResourceList) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.free.MilliCPU += need.MilliCPU
	p.free.MemoryBytes += need.MemoryBytes
	p.free.GPU += need.GPU
	close(p.changed)
	p.changed = make(chan struct{})
}

// count is how many reservations of need the whole pool holds at once.
func (p *capacityPool) count(need plan.ResourceList) int {
	n := int64(1 << 30)
	for _, q := range [][2]int64{{p.total.MilliCPU, need.MilliCPU}, {p.total.MemoryBytes, need.MemoryBytes}, {p.total.GPU, need.GPU}} {
		if q[1] > 0 {
			n = min(n, q[0]/q[1])
		}
	}
	return int(n)
}

// instanceSlots is the activity slot supplier of one instance type's task
// queue: a slot reserves the type's requests from the worker's pool. The
// SDK reserves a slot before it polls, so a queue waiting for a task holds
// its type's requests for that long (at most one long poll) too.
type instanceSlots struct {
	pool *capacityPool
	need plan.ResourceList
}

var _ sdkworker.SlotSupplier = (*instanceSlots)(nil)

// ReserveSlot waits until the type's requests fit.
func (s *instanceSlots) ReserveSlot(ctx context.Context, _ sdkworker.SlotReservationInfo) (*sdkworker.SlotPermit, error) {
	if err := s.pool.reserve(ctx, s.need); err != nil {
		return nil, err
	}
	return &sdkworker.SlotPermit{}, nil
}

// TryReserveSlot reserves the type's requests if they fit now.
func (s *instanceSlots) TryReserveSlot(sdkworker.SlotReservationInfo) *sdkworker.SlotPermit {
	if !s.pool.tryReserve(s.need) {
		return nil
	}
	return &sdkworker.SlotPermit{}
}

// MarkSlotUsed does nothing: the requests are held from reservation on.
func (s *instanceSlots) MarkSlotUsed(sdkworker.SlotMarkUsedInfo) {}

// ReleaseSlot gives the type's requests back.
func (s *instanceSlots) ReleaseSlot(sdkworker.SlotReleaseInfo) { s.pool.release(s.need) }

// MaxSlots is how many steps of the type the whole capacity runs at once.
func (s *instanceSlots) MaxSlots() int { return s.pool.count(s.need) }

// instanceTuner is the tuner of an instance type's queue: activities take
// capacity from the pool; other task kinds keep the SDK's fixed defaults.
func instanceTuner(pool *capacityPool, need plan.ResourceList) (sdkworker.WorkerTuner, error) {
	const defaultSlots = 1000 // the SDK's default for each task kind
	fixed := func() sdkworker.SlotSupplier {
		s, _ := sdkworker.NewFixedSizeSlotSupplier(defaultSlots)
		return s
	}
	return sdkworker.NewCompositeTuner(sdkworker.CompositeTunerOptions{
		WorkflowSlotSupplier:        fixed(),
		ActivitySlotSupplier:        &instanceSlots{pool: pool, need: need},
		LocalActivitySlotSupplier:   fixed(),
		NexusSlotSupplier:           fixed(),
		SessionActivitySlotSupplier: fixed(),
	})
}

// instanceLimits are the instance types of the queues, by queue name, and
// the GPUs of the worker's capacity, for the activities to hold steps to.
func instanceLimits(queues []queue) (map[string]plan.InstanceType, int64) {
	types := map[string]plan.InstanceType{}
	var gpus int64
	for _, q := range queues {
		if q.need != nil {
			types[q.name] = q.instanceType
			gpus = q.pool.total.GPU
		}
	}
	return types, gpus
}
