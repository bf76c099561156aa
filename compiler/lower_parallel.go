package compiler

import "github.com/porch-pipelines/porch/compiler/plan"

// Defaults of a parallel step, as Azure ML documents them.
const (
	defaultMaxRetries          = 2
	defaultRunTimeout          = 60
	defaultTaskOverheadTimeout = 30
	defaultFirstTaskTimeout    = 600
	defaultMonitorInterval     = 600
	defaultLoggingLevel        = "INFO"
)

// lowerParallel turns a checked parallel step's merged settings into the
// plan, every default filled. Flags in program_arguments win over the YAML
// keys of the same meaning, as with Azure ML's parallel runner.
func lowerParallel(s *stepAST) *plan.Parallel {
	par := s.par
	t := par.Task
	pp := &plan.Parallel{
		InputData:                       par.InputName,
		PartitionKeys:                   par.PartitionKeys,
		MaxConcurrencyPerInstance:       par.MaxConcurrency.or(0),
		EnvironmentVariables:            par.EnvVars,
		Retry:                           plan.ParallelRetry{MaxRetries: par.MaxRetries.or(defaultMaxRetries), TimeoutSeconds: par.Timeout.or(defaultRunTimeout)},
		MiniBatchErrorThreshold:         par.MiniBatchErrorThreshold.or(-1),
		ErrorThreshold:                  t.Flags.ErrorThreshold.or(par.ErrorThreshold.or(-1)),
		AllowedFailedPercent:            t.Flags.AllowedFailedPercent.or(100),
		LoggingLevel:                    orDefault(t.Flags.LoggingLevel, orDefault(par.LoggingLevel, defaultLoggingLevel)),
		TaskOverheadTimeoutSeconds:      t.Flags.TaskOverheadTimeout.or(defaultTaskOverheadTimeout),
		ProgressUpdateTimeoutSeconds:    t.Flags.ProgressUpdateTimeout.or(0),
		FirstTaskCreationTimeoutSeconds: t.Flags.FirstTaskTimeout.or(defaultFirstTaskTimeout),
		ResourceMonitorIntervalSeconds:  t.Flags.ResourceMonitor.or(defaultMonitorInterval),
		CopyLogsToParent:                t.Flags.CopyLogsToParent,
		Task: plan.ParallelTask{
			Code:             orDefault(t.Code, s.Component.Dir),
			EntryScript:      t.EntryScript.Value,
			Environment:      t.Environment,
			Env:              t.Env,
			ProgramArguments: t.Template,
			AppendRowTo:      t.AppendName,
		},
	}
	if par.MiniBatchSize != nil {
		// Kept as written. Like Azure ML, porch accepts a size with a unit
		// on a uri_folder input and a bare count on an mltable input; the
		// planner decides what each means.
		pp.MiniBatchSize = par.MiniBatchSize.Value
	}
	if par.Resources != nil {
		pp.Resources = *par.Resources
	}
	if pp.Resources.InstanceCount == 0 {
		pp.Resources.InstanceCount = 1
	}
	if pp.Task.ProgramArguments.Parts == nil {
		pp.Task.ProgramArguments.Parts = []plan.Part{}
	}
	return pp
}
