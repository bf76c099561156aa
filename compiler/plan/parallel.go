package plan

// StepParallel is a parallel step: its input is split into mini-batches, each
// processed by a Python entry script's run().
const StepParallel StepType = "parallel"

// Parallel is what a parallel step runs. The compiler fills every default, so
// a zero value here means the author chose zero (or "none" where said).
type Parallel struct {
	// InputData names the step input that is split (input_data:
	// ${{inputs.x}} names x).
	InputData string `json:"input_data"`
	// MiniBatchSize is mini_batch_size as written ("10", "1mb"), "" for
	// the default: 10 files for uri_folder, 1mb for mltable.
	MiniBatchSize string `json:"mini_batch_size,omitempty"`
	// PartitionKeys split a tabular input into one mini-batch per distinct
	// key tuple; they win over MiniBatchSize.
	PartitionKeys []string `json:"partition_keys,omitempty"`
	// MaxConcurrencyPerInstance is the number of entry-script processes per
	// instance; 0 means the CPU cores of the worker.
	MaxConcurrencyPerInstance int          `json:"max_concurrency_per_instance,omitempty"`
	Task                      ParallelTask `json:"task"`
	// Identity is the job's identity type, as Command.Identity.
	Identity string `json:"identity,omitempty"`
	// EnvironmentVariables are set for every entry-script process.
	EnvironmentVariables map[string]string `json:"environment_variables,omitempty"`
	Resources            Resources         `json:"resources"`
	Retry                ParallelRetry     `json:"retry"`
	// MiniBatchErrorThreshold is how many mini-batches may fail (after
	// their retries) before the step fails; -1 ignores failures.
	MiniBatchErrorThreshold int `json:"mini_batch_error_threshold"`
	// ErrorThreshold is how many items (files or rows) may fail; -1 ignores.
	ErrorThreshold int `json:"error_threshold"`
	// AllowedFailedPercent is the percentage of failed mini-batches
	// allowed, 0-100; 100 ignores failures.
	AllowedFailedPercent int `json:"allowed_failed_percent"`
	// LoggingLevel is the entry-script logger's level: DEBUG, INFO,
	// WARNING, ERROR or CRITICAL.
	LoggingLevel string `json:"logging_level"`
	// TaskOverheadTimeoutSeconds bounds loading one mini-batch (default 30).
	TaskOverheadTimeoutSeconds int `json:"task_overhead_timeout_seconds"`
	// ProgressUpdateTimeoutSeconds is how long a mini-batch may go without
	// progress (the activity heartbeat timeout); 0 means derived from the
	// other timeouts.
	ProgressUpdateTimeoutSeconds int `json:"progress_update_timeout_seconds,omitempty"`
	// FirstTaskCreationTimeoutSeconds bounds the wait from the step's start
	// until its first mini-batch starts (default 600).
	FirstTaskCreationTimeoutSeconds int `json:"first_task_creation_timeout_seconds"`
	// ResourceMonitorIntervalSeconds is how often each node's usage is
	// sampled (default 600); 0 disables the monitor.
	ResourceMonitorIntervalSeconds int `json:"resource_monitor_interval_seconds"`
	// CopyLogsToParent copies the step's job_result and progress files to
	// the parent pipeline's log folder when the step ends.
	CopyLogsToParent bool `json:"copy_logs_to_parent,omitempty"`
}

// ParallelTask is a parallel step's task: section (type run_function).
type ParallelTask struct {
	// Code is the absolute path of the folder holding the entry script,
	// or in a submitted plan its snapshot's URI (as Command.Code).
	Code string `json:"code"`
	// EntryScript is the script's path relative to Code.
	EntryScript string `json:"entry_script"`
	// Environment describes the environment as written, one line for
	// display.
	Environment string `json:"environment,omitempty"`
	// Env is the environment the entry scripts run in, as Command.Env.
	Env *Environment `json:"environment_spec,omitempty"`
	// ProgramArguments are the script's arguments with the flags porch
	// reads itself removed; rendered like a command.
	ProgramArguments Template `json:"program_arguments"`
	// AppendRowTo names the step output every run() result is appended
	// to, "" for none.
	AppendRowTo string `json:"append_row_to,omitempty"`
}

// ParallelRetry is retry_settings.
type ParallelRetry struct {
	// MaxRetries is how often a failed mini-batch is retried (default 2).
	MaxRetries int `json:"max_retries"`
	// TimeoutSeconds bounds one run() call (default 60).
	TimeoutSeconds int `json:"timeout_seconds"`
}

// AppendRowFileName is the file append_row_to writes when the output is a
// folder, as Azure names it.
const AppendRowFileName = "parallel_run_step.txt"
