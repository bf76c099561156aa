package parallel

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"github.com/porch-pipelines/porch/activities/monitor"
)

// NodeUsage is a resource monitor's heartbeat: the latest sample of a node.
type NodeUsage struct {
	Node   string         `json:"node"`
	Sample monitor.Sample `json:"sample"`
}

// MonitorResources samples this node's resource usage, and that of the
// step's entry-script processes here, every interval until the workflow
// cancels it. It runs on the node's own task queue, so it measures the node
// it names. Each sample is written to logs/sys/perf/<node>/ and recorded as
// the activity's heartbeat, where `porch job show` reads the live figures.
func (a *Activities) MonitorResources(ctx context.Context, in MonitorInput) error {
	a.RefreshDatastores(ctx)
	if in.IntervalSeconds <= 0 {
		return nil
	}
	f, err := a.parallelFolders(in.Ref)
	if err != nil {
		return err
	}
	rec, err := monitor.NewRecorder(filepath.Join(f.logs, "sys", "perf", in.Node))
	if err != nil {
		return fmt.Errorf("step %q: open resource log: %w", in.Ref.StepPath, err)
	}
	// FinishParallel on this worker stops the monitor at once.
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	ended := a.parallel().watch(in.Ref.RunID, in.Ref.StepPath, stop)
	defer ended()
	defer func() {
		rec.Close()
		// The samples end here; on object storage they go up now, with
		// a context of their own: the activity's is cancelled.
		pctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_ = publishDir(pctx, f, "logs/sys/perf/"+in.Node)
	}()
	s := monitor.NewSampler(func() []int {
		var pids []int
		for _, rt := range a.parallel().step(in.Ref.RunID, in.Ref.StepPath) {
			pids = append(pids, rt.pool.PIDs()...)
			pids = append(pids, rt.instance.pids()...)
		}
		return pids
	})
	// Heartbeats go out every second, carrying the latest sample, so the
	// monitor learns within a second that its step has ended.
	interval := time.Duration(in.IntervalSeconds) * time.Second
	tick := time.NewTicker(min(interval, time.Second))
	defer tick.Stop()
	var last NodeUsage
	var sampled time.Time
	for {
		if time.Since(sampled) >= interval {
			sampled = time.Now()
			if sample, err := s.Sample(); err == nil {
				if werr := rec.Write(sample); werr != nil {
					return fmt.Errorf("step %q: write resource log: %w", in.Ref.StepPath, werr)
				}
				last = NodeUsage{Node: in.Node, Sample: sample}
			}
		}
		recordHeartbeat(ctx, last)
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}
