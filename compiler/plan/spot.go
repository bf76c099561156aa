package plan

import "strings"

// TierSpot is queue_settings.job_tier: spot. Such a step runs on
// preemptible workers, and so does every step of a low_priority compute.
const TierSpot = "spot"

// spotSuffix names the spot variant of a task queue.
const spotSuffix = "-spot"

// SpotTaskQueue is the task queue preemptible workers of queue serve:
// <queue>-spot.
func SpotTaskQueue(queue string) string { return queue + spotSuffix }

// IsSpotTaskQueue says whether queue is a spot variant.
func IsSpotTaskQueue(queue string) bool { return strings.HasSuffix(queue, spotSuffix) }

// Spot says whether the step runs on preemptible workers: its job tier is
// spot or its compute is a low_priority amlcompute.
func (r Resources) Spot() bool { return r.JobTier == TierSpot || r.LowPriority }
