// Package sweep holds the activities of sweep steps: it samples trials from
// the search space, reads the metrics each trial logs, and writes the
// sweep's trials.csv.
package sweep
