// Package workflows interprets compiled plans on Temporal.
//
// Pipeline is the one DAG workflow: it runs a plan.Pipeline's steps, each as
// a child workflow whose id is "<run>/<step path>", started the moment its own
// dependencies succeed. CommandStep runs one command step's RunCommand
// activity on the task queue of the step's compute. Nested pipeline steps are
// child Pipeline workflows.
//
// Determinism rules for everything in this package that runs inside a
// workflow:
//   - The input (the plan) is the only source of truth: no files, environment,
//     flags, clock or globals. Time is workflow.Now.
//   - No go statements, channels, select or sync: workflow.Go, Channel and
//     Selector only.
//   - Never range over a map to order work. Steps are walked in plan order;
//     maps are for lookups.
//   - Workflows and activities are registered under explicit names (api.go),
//     so renaming a Go function never breaks a running history.
//   - A change that alters the commands a workflow issues goes behind
//     workflow.GetVersion and keeps the replay fixtures in
//     testdata/histories passing (TestReplay).
//   - Pass references (URIs), never data, between workflows and activities.
package workflows
