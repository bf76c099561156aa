package command

import (
	"github.com/porch-pipelines/porch/activities/launch"
	"github.com/porch-pipelines/porch/activities/stepio"
)

// Activity type names, registered explicitly so renaming a Go method never
// breaks a running history.
const (
	RunCommandName = "RunCommand"
)

// RunCommandInput is everything a worker needs to run one command step. It
// carries references (URIs, paths), never data.
type RunCommandInput struct {
	// Step is the step as the workflow resolved it; its fields are
	// RunCommandInput's own in JSON.
	stepio.Step
	// PriorAttempts are attempts the workflow made before this activity
	// (a spot step's preempted runs), counted in the step's attempt number.
	PriorAttempts int32 `json:"prior_attempts,omitempty"`
	// Notes are lines for the step's log, such as why it runs where it does.
	Notes []string `json:"notes,omitempty"`
	// Instance is set when a distributed step's instances run on several
	// workers: this activity runs one of them. nil runs every instance on
	// this host.
	Instance *InstanceAssignment `json:"instance,omitempty"`
	// Follow names a command that runs on this worker already, moved out
	// of the local activity that started it (RunCommandResult.Moved): the
	// activity follows it to its end rather than run the step.
	Follow string `json:"follow,omitempty"`
}

// Moved is where a command that outlasted its local activity runs on.
type Moved struct {
	// Key names the command among those moved on its worker.
	Key string `json:"key"`
	// Node is the worker; its own queue (plan.NodeTaskQueue) takes the
	// activity that follows the command.
	Node string `json:"node"`
}

// InstanceAssignment is one instance of a distributed step whose instances
// run on several workers.
type InstanceAssignment struct {
	// Index is the instance (NODE_RANK), of Count.
	Index int `json:"index"`
	Count int `json:"count"`
	// MasterAddr and MasterPort are where instance 0 listens for the
	// others (pytorch's MASTER_ADDR and MASTER_PORT).
	MasterAddr string `json:"master_addr"`
	MasterPort int    `json:"master_port"`
}

// RunCommandResult is what a finished command step reports.
type RunCommandResult struct {
	// WorkDir is the local working folder (holding ./outputs and ./logs).
	WorkDir string `json:"work_dir"`
	// LogDir is the step's log folder; user_logs/std_log.txt is under it.
	LogDir string `json:"log_dir"`
	// Outputs are the outputs' local paths, artifacts included, in
	// declaration order.
	Outputs []stepio.OutputLocation `json:"outputs,omitempty"`
	// Attempt is the activity attempt that succeeded (1-based).
	Attempt int32 `json:"attempt"`
	// Image is the image the step ran in, nil when it ran on the host.
	Image *launch.Image `json:"image,omitempty"`
	// EnvironmentNote says why the step's environment was not applied
	// (the worker runs steps on its host), "" when it was or it has none.
	EnvironmentNote string `json:"environment_note,omitempty"`
	// Moved is set by a local activity whose command runs on: the step
	// follows it there. Declined is set by one that cannot run the
	// command (its worker runs no steps), with the reason. A step's
	// result has neither.
	Moved    *Moved `json:"moved,omitempty"`
	Declined string `json:"declined,omitempty"`
}

// CommandLostType is the application error type of an activity that
// found no command to follow: it stopped before the activity came, or its
// worker restarted. The step runs again.
const CommandLostType = "CommandLost"

// CommandFailedType is the application error type of a command that exited
// non-zero. Its details are one CommandFailure.
const CommandFailedType = "CommandFailed"

// CommandTimedOutType is the application error type of a command stopped
// because it ran longer than its limits.timeout. Its details are one
// CommandFailure.
const CommandTimedOutType = "CommandTimedOut"

// CommandFailure details a failed command.
type CommandFailure struct {
	ExitCode int `json:"exit_code"`
	// StderrTail is the last 20 lines of the command's stderr.
	StderrTail []string `json:"stderr_tail"`
	// LogFile is the step's std_log.txt.
	LogFile string `json:"log_file"`
	// Attempt is the activity attempt that failed (1-based).
	Attempt int32 `json:"attempt,omitempty"`
}
