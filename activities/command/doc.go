// Package command runs command steps as real processes on the worker's
// host: one per rank of a distribution, in process groups, within their
// limits, with logs, heartbeats and secrets redacted.
package command
