// Package telemetry names porch's own Prometheus metrics and records them
// through a Temporal metrics handler: activity.GetMetricsHandler in
// activities, workflow.GetMetricsHandler in workflows (which records
// nothing while a workflow replays, and writes nothing to its history).
//
// The handler a worker's client carries decides where they go: with
// `porch worker --metrics-address` a Prometheus registry (package
// monitoring), otherwise nowhere. Counters show in Prometheus with
// "_total" appended and timers as histograms in seconds ("_seconds"), the
// names Metrics lists.
//
// Labels are those an Azure ML user filters by: compute (the compute
// target's name, "serverless" for the default compute), step_type
// (command, parallel, sweep, pipeline) and experiment. Run ids and step
// paths are never labels: they grow without bound.
package telemetry

import (
	"time"

	"go.temporal.io/sdk/client"
)

// Kind is how Prometheus shows a metric.
type Kind string

// Kinds of metric.
const (
	Counter   Kind = "counter"
	Gauge     Kind = "gauge"
	Histogram Kind = "histogram"
)

// Metric is one of porch's metrics as Prometheus shows it.
type Metric struct {
	// Name is the Prometheus name: a counter's ends in _total, a
	// histogram's in _seconds.
	Name string
	Kind Kind
	// Labels are porch's labels. Every series also carries
	// service_name="porch" (package monitoring), and those recorded in
	// workflows (steps, quota waits) the Temporal SDK's workflow tags
	// (namespace, task_queue, workflow_type, ...).
	Labels []string
	// Help says what it counts, for docs/metrics.md and the dashboard.
	Help string
}

// Label names.
const (
	LabelCompute    = "compute"
	LabelStepType   = "step_type"
	LabelExperiment = "experiment"
	LabelTier       = "tier"
	LabelQuotaKind  = "quota_kind"
	LabelQuotaPool  = "quota_pool"
)

// The instrument names handed to the metrics handler; the handler's
// Prometheus exporter adds the suffixes of Metric.Name.
const (
	stepsStarted      = "porch_steps_started"
	stepsSucceeded    = "porch_steps_succeeded"
	stepsFailed       = "porch_steps_failed"
	stepsCanceled     = "porch_steps_canceled"
	stepsReused       = "porch_steps_reused"
	stepDuration      = "porch_step_duration"
	miniBatchesDone   = "porch_minibatches_processed"
	miniBatchesFailed = "porch_minibatches_failed"
	itemsProcessed    = "porch_items_processed"
	itemsFailed       = "porch_items_failed"
	miniBatchDuration = "porch_minibatch_duration"
	quotaWait         = "porch_quota_wait"
	workerComputes    = "porch_worker_computes"
	fleetNodes        = "porch_fleet_nodes"
)

var stepLabels = []string{LabelCompute, LabelStepType, LabelExperiment}

var all = []Metric{
	{stepsStarted + "_total", Counter, stepLabels, "steps started"},
	{stepsSucceeded + "_total", Counter, stepLabels, "steps that succeeded"},
	{stepsFailed + "_total", Counter, stepLabels, "steps that failed"},
	{stepsCanceled + "_total", Counter, stepLabels, "steps canceled (a run canceled, or a sibling failed)"},
	{stepsReused + "_total", Counter, stepLabels, "steps not run because an earlier execution of the run (a resume) succeeded them"},
	{stepDuration + "_seconds", Histogram, append(stepLabels, "status"), "time from a step's start to its end, by status (succeeded, failed, canceled)"},
	{miniBatchesDone + "_total", Counter, []string{LabelCompute}, "parallel-step mini-batches whose run() succeeded"},
	{miniBatchesFailed + "_total", Counter, []string{LabelCompute}, "failed mini-batch attempts (run() raised, returned too few results, timed out or crashed)"},
	{itemsProcessed + "_total", Counter, []string{LabelCompute}, "items (files or rows) of mini-batches that succeeded"},
	{itemsFailed + "_total", Counter, []string{LabelCompute}, "items of failed mini-batch attempts"},
	{miniBatchDuration + "_seconds", Histogram, []string{LabelCompute, "status"}, "time run() took on a mini-batch, by status (succeeded, failed)"},
	{quotaWait + "_seconds", Histogram, []string{LabelQuotaKind, LabelQuotaPool}, "time a step waited for its cores from a quota pool (a compute's or a VM size's); its _count counts claims"},
	{workerComputes, Gauge, []string{LabelCompute, LabelTier}, "1 for each compute (and tier: dedicated, spot) a worker serves: sum by compute counts a fleet's nodes"},
	{fleetNodes, Gauge, []string{LabelCompute}, "workers porch dev's local fleet runs for a compute"},
}

// Metrics lists porch's own metrics.
func Metrics() []Metric { return append([]Metric(nil), all...) }

// Compute is the compute label of a plan compute name: "" is the
// default compute, which Azure calls serverless.
func Compute(compute string) string {
	if compute == "" {
		return "serverless"
	}
	return compute
}

// StepStarted counts a step that started.
func StepStarted(h client.MetricsHandler, compute, stepType, experiment string) {
	stepHandler(h, compute, stepType, experiment).Counter(stepsStarted).Inc(1)
}

// StepReused counts a step an earlier execution of its run finished.
func StepReused(h client.MetricsHandler, compute, stepType, experiment string) {
	stepHandler(h, compute, stepType, experiment).Counter(stepsReused).Inc(1)
}

// StepEnded counts a step that ended with status (succeeded, failed or
// canceled) after running for took.
func StepEnded(h client.MetricsHandler, compute, stepType, experiment, status string, took time.Duration) {
	sh := stepHandler(h, compute, stepType, experiment)
	switch status {
	case "succeeded":
		sh.Counter(stepsSucceeded).Inc(1)
	case "failed":
		sh.Counter(stepsFailed).Inc(1)
	case "canceled":
		sh.Counter(stepsCanceled).Inc(1)
	}
	sh.WithTags(map[string]string{"status": status}).Timer(stepDuration).Record(took)
}

// StepCountersAtZero makes the step counters of one label set exist at
// 0, so that Prometheus sees the first step that starts, fails or is
// reused as an increase: a counter that first appears at 1 shows no rate.
// A run calls it as it starts, for each compute and step type of its
// steps.
func StepCountersAtZero(h client.MetricsHandler, compute, stepType, experiment string) {
	sh := stepHandler(h, compute, stepType, experiment)
	for _, name := range []string{stepsStarted, stepsSucceeded, stepsFailed, stepsCanceled, stepsReused} {
		sh.Counter(name).Inc(0)
	}
}

func stepHandler(h client.MetricsHandler, compute, stepType, experiment string) client.MetricsHandler {
	return h.WithTags(map[string]string{LabelCompute: Compute(compute), LabelStepType: stepType, LabelExperiment: experiment})
}

// MiniBatchSucceeded counts a mini-batch whose run() succeeded on items.
// h carries the compute label (worker.Start's activity interceptor).
func MiniBatchSucceeded(h client.MetricsHandler, items int, took time.Duration) {
	h.Counter(miniBatchesDone).Inc(1)
	h.Counter(itemsProcessed).Inc(int64(items))
	h.WithTags(map[string]string{"status": "succeeded"}).Timer(miniBatchDuration).Record(took)
}

// MiniBatchCountersAtZero makes the mini-batch and item counters of
// compute exist at 0, as StepCountersAtZero does for steps: a worker calls
// it as it starts, for each compute it serves, with the handler its
// mini-batches record through.
func MiniBatchCountersAtZero(h client.MetricsHandler, compute string) {
	ch := h.WithTags(map[string]string{LabelCompute: Compute(compute)})
	for _, name := range []string{miniBatchesDone, miniBatchesFailed, itemsProcessed, itemsFailed} {
		ch.Counter(name).Inc(0)
	}
}

// MiniBatchFailed counts a failed attempt at a mini-batch of items.
func MiniBatchFailed(h client.MetricsHandler, items int, took time.Duration) {
	h.Counter(miniBatchesFailed).Inc(1)
	h.Counter(itemsFailed).Inc(int64(items))
	h.WithTags(map[string]string{"status": "failed"}).Timer(miniBatchDuration).Record(took)
}

// QuotaWaited records how long a step waited for its cores from a pool.
func QuotaWaited(h client.MetricsHandler, kind, pool string, took time.Duration) {
	h.WithTags(map[string]string{LabelQuotaKind: kind, LabelQuotaPool: pool}).Timer(quotaWait).Record(took)
}

// WorkerServes sets the gauge that says this worker serves compute, on
// the tier dedicated or spot.
func WorkerServes(h client.MetricsHandler, compute, tier string) {
	h.WithTags(map[string]string{LabelCompute: Compute(compute), LabelTier: tier}).Gauge(workerComputes).Update(1)
}

// FleetNodes sets how many workers a local fleet runs for compute.
func FleetNodes(h client.MetricsHandler, compute string, n int) {
	h.WithTags(map[string]string{LabelCompute: Compute(compute)}).Gauge(fleetNodes).Update(float64(n))
}
