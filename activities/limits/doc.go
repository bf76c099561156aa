// Package limits hands out a worker's cores and GPUs to the instances of
// steps from instance types' queues, so each instance runs within its
// type's CPU, GPU and memory limits.
package limits
