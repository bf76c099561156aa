package plan

import (
	"strconv"
	"strings"
)

// WorkerFlags are the `porch worker` flags of a worker that serves queue,
// the task queue of a step on compute ("" for the default compute): ""
// for the default queue, " --compute cpu-cluster", " --compute k8s
// --instance-type small" for an instance type's queue, " --compute
// serverless --instance-type small" for a serverless one, with
// " --preemptible" for a spot queue. A queue that is none of these (a
// parallel step's node queue) gives "".
func WorkerFlags(compute, queue string) string {
	spot := ""
	if IsSpotTaskQueue(queue) {
		queue, spot = strings.TrimSuffix(queue, spotSuffix), " --preemptible"
	}
	if t, ok := strings.CutPrefix(queue, ServerlessTaskQueue("")); ok && compute == "" {
		return " --compute serverless --instance-type " + t + spot
	}
	if compute == "" {
		return spot
	}
	own := TaskQueue(compute)
	if queue == own {
		return " --compute " + compute + spot
	}
	if t, ok := strings.CutPrefix(queue, own+"-"); ok {
		return " --compute " + compute + " --instance-type " + t + spot
	}
	// A step of an unregistered compute on a porch dev server runs on the
	// default queue.
	if queue == DefaultTaskQueue {
		return spot
	}
	return ""
}

// QueueOwner names what a task queue of a step on compute serves, for
// messages: "the default compute", `compute "cpu-cluster"`, `instance
// type "small" of compute "k8s"` or `serverless instance type "small"`,
// with "spot workers of " before a spot queue's.
func QueueOwner(compute, queue string) string {
	spot := ""
	if IsSpotTaskQueue(queue) {
		queue, spot = strings.TrimSuffix(queue, spotSuffix), "spot workers of "
	}
	if t, ok := strings.CutPrefix(queue, ServerlessTaskQueue("")); ok && compute == "" {
		return spot + "serverless instance type " + strconv.Quote(t)
	}
	if compute == "" || queue == DefaultTaskQueue {
		return spot + "the default compute"
	}
	if t, ok := strings.CutPrefix(queue, TaskQueue(compute)+"-"); ok {
		return spot + "instance type " + strconv.Quote(t) + " of compute " + strconv.Quote(compute)
	}
	return spot + "compute " + strconv.Quote(compute)
}

// NoWorker says that no worker polls queue, the task queue of a step on
// compute, and which command starts one, in backticks: the Temporal UI
// shows it as markdown, which would turn "--" into a dash. connect, when
// not "", are the flags that reach the server, such as "--address
// host:7233".
func NoWorker(compute, queue, connect string) string {
	addr := ""
	if connect != "" {
		addr = " " + connect
	}
	return "no worker serves " + QueueOwner(compute, queue) + " (task queue " + strconv.Quote(queue) + "): start one with `porch worker" +
		addr + WorkerFlags(compute, queue) + "`"
}
