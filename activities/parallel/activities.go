package parallel

import (
	"sync"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/worker"

	"github.com/porch-pipelines/porch/activities/limits"
	"github.com/porch-pipelines/porch/activities/stepio"
)

// Activities are the activities of parallel steps on one worker: they
// plan mini-batches, run them in entry-script processes kept across
// mini-batches, and report the step's progress and results.
type Activities struct {
	*stepio.Host
	// Devices are the worker's cores and GPUs, shared with the other step
	// kinds' instances.
	Devices *limits.Devices
	// Python is the interpreter that hosts entry scripts; "" means python3
	// on PATH.
	Python string
	// IdleShutdown is how long a step's entry-script processes may sit
	// unused before they are shut down; 0 means 30 seconds.
	IdleShutdown time.Duration

	parallelOnce sync.Once
	runtimes     *runtimes
}

// Register registers the activities of parallel steps under their
// explicit names.
func (a *Activities) Register(r worker.ActivityRegistry) {
	r.RegisterActivityWithOptions(a.PlanMiniBatches, activity.RegisterOptions{Name: PlanMiniBatchesName})
	r.RegisterActivityWithOptions(a.RunMiniBatch, activity.RegisterOptions{Name: RunMiniBatchName})
	r.RegisterActivityWithOptions(a.RunMiniBatches, activity.RegisterOptions{Name: RunMiniBatchesName})
	r.RegisterActivityWithOptions(a.ListPendingMiniBatches, activity.RegisterOptions{Name: ListPendingMiniBatchesName})
	r.RegisterActivityWithOptions(a.ReportParallelProgress, activity.RegisterOptions{Name: ReportParallelProgressName})
	r.RegisterActivityWithOptions(a.FinishParallel, activity.RegisterOptions{Name: FinishParallelName})
	r.RegisterActivityWithOptions(a.MonitorResources, activity.RegisterOptions{Name: MonitorResourcesName})
}
