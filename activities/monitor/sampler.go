package monitor

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"sync"
	"time"

	"github.com/shirou/gopsutil/v4/cpu"
	"github.com/shirou/gopsutil/v4/disk"
	"github.com/shirou/gopsutil/v4/mem"
	"github.com/shirou/gopsutil/v4/net"
)

// Sample is one reading of a node and of the process trees running on it.
// Rates and CPU percentages are over the time since the previous sample of
// the same Sampler; they are 0 on the first sample.
type Sample struct {
	// Time is when the sample was taken.
	Time time.Time `json:"time"`
	// CPUPercent is the node's CPU use, 0-100 over all cores.
	CPUPercent float64 `json:"cpu_percent"`
	// MemUsedBytes is the node's memory in use: total less available.
	MemUsedBytes uint64 `json:"mem_used_bytes"`
	// MemTotalBytes is the node's physical memory.
	MemTotalBytes uint64 `json:"mem_total_bytes"`
	// MemPercent is MemUsedBytes as a percentage of MemTotalBytes.
	MemPercent float64 `json:"mem_percent"`
	// DiskReadBytesPerSec is the read rate summed over the node's physical
	// disks.
	DiskReadBytesPerSec float64 `json:"disk_read_bytes_per_sec"`
	// DiskWriteBytesPerSec is the write rate summed over the node's physical
	// disks.
	DiskWriteBytesPerSec float64 `json:"disk_write_bytes_per_sec"`
	// NetSentBytesPerSec is the send rate summed over the network interfaces
	// other than lo.
	NetSentBytesPerSec float64 `json:"net_sent_bytes_per_sec"`
	// NetRecvBytesPerSec is the receive rate summed over the network
	// interfaces other than lo.
	NetRecvBytesPerSec float64 `json:"net_recv_bytes_per_sec"`
	// Processes counts the live processes in the trees.
	Processes int `json:"processes"`
	// TreeCPUPercent is the CPU use of the trees; 100 is one core.
	TreeCPUPercent float64 `json:"tree_cpu_percent"`
	// TreeRSSBytes is the resident memory of the trees, summed over their
	// processes (shared pages count once per process).
	TreeRSSBytes uint64 `json:"tree_rss_bytes"`
}

// Sampler takes Samples, keeping the previous counters to turn them into
// rates. Each Sampler keeps its own counters (it does not use gopsutil's
// process-wide cpu.Percent state), so several may run in one process. It is
// safe for concurrent use. A Sample costs about 1.5 ms of CPU on a node
// running 80 processes, growing by about 13 µs per process (see the package
// documentation).
type Sampler struct {
	roots func() []int

	mu       sync.Mutex
	procs    scanner
	clkTck   float64
	pageSize uint64
	prev     counters
}

// counters are the cumulative readings of the previous sample. A reading
// that failed is marked not ok, and the rate that needs it is 0 next time.
type counters struct {
	at                  time.Time // with its monotonic reading
	cpuOK               bool
	cpuAll, cpuBusy     float64 // seconds
	diskOK              bool
	diskRead, diskWrite uint64
	netOK               bool
	netSent, netRecv    uint64
	// ticks holds every process of the previous scan, nil when there was
	// none.
	ticks map[procKey]uint64
}

// NewSampler returns a Sampler of the node and of the process trees under
// the PIDs that roots returns at each sample: the roots and all their
// descendants. A nil roots, or PIDs that are gone, measure no tree.
func NewSampler(roots func() []int) *Sampler {
	return &Sampler{
		roots:    roots,
		procs:    scanner{root: "/proc"},
		clkTck:   clockTicks(),
		pageSize: uint64(os.Getpagesize()),
	}
}

// Sample takes one reading. When part of it cannot be read it still returns
// the other parts, with an error naming what failed.
func (s *Sampler) Sample() (Sample, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	out := Sample{Time: now}
	var next counters
	next.at = now
	secs := 0.0
	if !s.prev.at.IsZero() {
		secs = now.Sub(s.prev.at).Seconds()
	}
	errs := []error{
		s.sampleCPU(&out, &next),
		s.sampleMem(&out),
		s.sampleDisk(&out, &next, secs),
		s.sampleNet(&out, &next, secs),
		s.sampleTree(&out, &next, secs),
	}
	s.prev = next
	return out, errors.Join(errs...)
}

func (s *Sampler) sampleCPU(out *Sample, next *counters) error {
	times, err := cpu.Times(false)
	if err != nil || len(times) == 0 {
		return fmt.Errorf("read node CPU times: %w", orNone(err))
	}
	next.cpuOK = true
	next.cpuAll, next.cpuBusy = cpuBusy(times[0])
	if s.prev.cpuOK && next.cpuAll > s.prev.cpuAll {
		busy := (next.cpuBusy - s.prev.cpuBusy) / (next.cpuAll - s.prev.cpuAll) * 100
		out.CPUPercent = min(max(busy, 0), 100)
	}
	return nil
}

// cpuBusy returns all and busy CPU seconds. On Linux guest time is already
// counted in user time, so it is taken out of the total; idle and iowait
// are not busy.
func cpuBusy(t cpu.TimesStat) (all, busy float64) {
	all = t.User + t.System + t.Idle + t.Nice + t.Iowait + t.Irq + t.Softirq + t.Steal
	if runtime.GOOS != "linux" {
		all += t.Guest + t.GuestNice
	}
	return all, all - t.Idle - t.Iowait
}

func (s *Sampler) sampleMem(out *Sample) error {
	vm, err := mem.VirtualMemory()
	if err != nil {
		return fmt.Errorf("read node memory: %w", err)
	}
	out.MemUsedBytes, out.MemTotalBytes, out.MemPercent = vm.Used, vm.Total, vm.UsedPercent
	return nil
}

func (s *Sampler) sampleDisk(out *Sample, next *counters, secs float64) error {
	disks := physicalDisks()
	if len(disks) == 0 {
		// No disk to count (a container without /sys/block devices): the
		// rates are 0, not an error.
		next.diskOK = true
		return nil
	}
	stats, err := disk.IOCounters(disks...)
	if err != nil {
		return fmt.Errorf("read node disk I/O: %w", err)
	}
	next.diskOK = true
	for _, st := range stats {
		next.diskRead += st.ReadBytes
		next.diskWrite += st.WriteBytes
	}
	if s.prev.diskOK {
		out.DiskReadBytesPerSec = rate(s.prev.diskRead, next.diskRead, secs)
		out.DiskWriteBytesPerSec = rate(s.prev.diskWrite, next.diskWrite, secs)
	}
	return nil
}

// physicalDisks names the block devices backed by a device: /sys/block
// entries with a device link. That leaves out partitions (counted in their
// disk), and loop, ram, zram, device-mapper and md devices, whose I/O either
// is not disk I/O or is counted again in the disks under them.
func physicalDisks() []string {
	entries, err := os.ReadDir("/sys/block")
	if err != nil {
		return nil
	}
	var names []string
	for _, e := range entries {
		if _, err := os.Stat("/sys/block/" + e.Name() + "/device"); err == nil {
			names = append(names, e.Name())
		}
	}
	return names
}

func (s *Sampler) sampleNet(out *Sample, next *counters, secs float64) error {
	stats, err := net.IOCounters(true)
	if err != nil {
		return fmt.Errorf("read node network I/O: %w", err)
	}
	next.netOK = true
	for _, st := range stats {
		if st.Name == "lo" {
			continue
		}
		next.netSent += st.BytesSent
		next.netRecv += st.BytesRecv
	}
	if s.prev.netOK {
		out.NetSentBytesPerSec = rate(s.prev.netSent, next.netSent, secs)
		out.NetRecvBytesPerSec = rate(s.prev.netRecv, next.netRecv, secs)
	}
	return nil
}

func (s *Sampler) sampleTree(out *Sample, next *counters, secs float64) error {
	if s.roots == nil {
		return nil
	}
	roots := s.roots()
	procs, err := s.procs.scan()
	if err != nil {
		return err
	}
	var u treeUsage
	u, next.ticks = measureTrees(procs, roots, s.prev.ticks)
	out.Processes = u.processes
	out.TreeRSSBytes = u.rssPages * s.pageSize
	if s.prev.ticks != nil && secs > 0 {
		out.TreeCPUPercent = float64(u.deltaTicks) / s.clkTck / secs * 100
	}
	return nil
}

// rate is the change from before to now per second. A counter that went
// backwards (a device or interface that went away, a wrap) gives 0.
func rate(before, now uint64, secs float64) float64 {
	if secs <= 0 || now < before {
		return 0
	}
	return float64(now-before) / secs
}

func orNone(err error) error {
	if err == nil {
		return errors.New("no CPU times reported")
	}
	return err
}
