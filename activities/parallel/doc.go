// Package parallel runs parallel steps: it plans mini-batches, runs each in
// entry-script processes kept across mini-batches, and records the step's
// progress, results and logs in Azure ML's layout.
package parallel
