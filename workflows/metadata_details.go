package workflows

import (
	"fmt"
	"strings"

	"github.com/porch-pipelines/porch/activities/stepio"
	"github.com/porch-pipelines/porch/compiler/plan"
)

// RunDetails is a run's static details in markdown: the file, the inputs,
// the steps with their types and computes, and where outputs and logs land.
func RunDetails(p *plan.Plan, runID string) string {
	var b strings.Builder
	b.WriteString(fmt.Sprintf("**porch run** `%s` of `%s`\n\n", runID, p.Source))
	var facts []string
	if p.ExperimentName != "" {
		facts = append(facts, "experiment `"+p.ExperimentName+"`")
	}
	if p.Settings.SubmittedBy != "" {
		facts = append(facts, "submitted by `"+p.Settings.SubmittedBy+"`")
	}
	facts = append(facts, "datastore `"+datastore(p.Settings.DefaultDatastore)+"`")
	if p.Settings.ContinueOnStepFailure {
		facts = append(facts, "continue on step failure")
	}
	b.WriteString(strings.Join(facts, " · ") + "\n\n")
	writeInputs(&b, "Inputs", p.Pipeline.Inputs)
	b.WriteString("**Steps**\n\n")
	writeSteps(&b, p.Pipeline)
	ds := datastore(p.Settings.DefaultDatastore)
	b.WriteString(fmt.Sprintf("\n**Outputs and logs**\n\nA step's outputs land in `%s` unless the step gives them a path; "+
		"its logs in `%s` (`user_logs/std_log.txt`; a parallel step's under `logs/`). "+
		"`porch job logs %s STEP` prints a step's log.\n",
		plan.DefaultOutputURI(ds, runID, "STEP", "OUTPUT"), stepio.StepArtifactsURI(ds, runID, "STEP"), runID))
	expand := strings.NewReplacer("${{name}}", runID, "${{default_datastore}}", ds)
	writePaths(&b, p.Pipeline, expand, true)
	return cut(b.String(), maxDetails)
}

// datastore is the datastore outputs land in when the plan's settings
// name ds (or none).
func datastore(ds string) string {
	if ds == "" {
		return plan.DefaultDatastore
	}
	return ds
}

// writeSteps adds a list item per step, nested pipelines' steps after
// their own, by path: `train` · command on cpu-cluster · after prep. A
// list rather than a table: Temporal's UI draws tables without padding.
func writeSteps(b *strings.Builder, pl plan.Pipeline) {
	for _, s := range pl.Steps {
		line := fmt.Sprintf("- `%s` · %s", s.Path, s.Type)
		if s.Type != plan.StepPipeline {
			line += " on " + computeName(s.Compute)
		}
		if len(s.DependsOn) > 0 {
			line += " · after " + strings.Join(s.DependsOn, ", ")
		}
		b.WriteString(line + "\n")
		if s.Pipeline != nil && s.Type == plan.StepPipeline {
			writeSteps(b, *s.Pipeline)
		}
	}
}

// writePaths lists the step outputs that name a path of their own, with
// the run-time names in them expanded.
func writePaths(b *strings.Builder, pl plan.Pipeline, expand *strings.Replacer, first bool) bool {
	for _, s := range pl.Steps {
		for _, o := range s.Outputs {
			if o.Path == "" {
				continue
			}
			if first {
				b.WriteString("\nOutputs with a path of their own:\n\n")
				first = false
			}
			b.WriteString(fmt.Sprintf("- `%s.%s`: `%s`\n", s.Path, o.Name, expand.Replace(o.Path)))
		}
		if s.Pipeline != nil && s.Type == plan.StepPipeline {
			first = writePaths(b, *s.Pipeline, expand, first)
		}
	}
	return first
}

// writeInputs lists inputs with their values, if any.
func writeInputs(b *strings.Builder, title string, in []plan.Input) {
	if len(in) == 0 {
		return
	}
	b.WriteString(fmt.Sprintf("**%s**\n\n", title))
	for _, i := range in {
		b.WriteString(fmt.Sprintf("- `%s`", i.Name))
		if i.Type != "" {
			b.WriteString(fmt.Sprintf(" (%s)", i.Type))
		}
		b.WriteString(fmt.Sprintf(": %s\n", valueText(i.Value)))
	}
	b.WriteString("\n")
}

// valueText is a bound value as a reader of the details wants it.
func valueText(v plan.Value) string {
	switch v.Kind {
	case plan.ValueLiteral:
		return "`" + oneLine(v.Literal, maxSummary) + "`"
	case plan.ValueData:
		if v.Data != nil {
			return "`" + v.Data.Path + "`"
		}
	case plan.ValueStepOutput:
		return fmt.Sprintf("output `%s` of step `%s`", v.Output, v.Step)
	case plan.ValueParentInput:
		return fmt.Sprintf("the pipeline's input `%s`", v.Input)
	case plan.ValueSearchSpace:
		return "set by each trial"
	}
	return "unset"
}

// stepDetails is a step workflow's static details in markdown: what it
// runs, its inputs as bound, and where its outputs and logs land.
// A step that runs on a compute without an artifacts output (a trial) has
// its logs in the default place in datastore ds.
func stepDetails(runID, ds string, s plan.Step, inputs []plan.Input, outputs []plan.Output) string {
	var b strings.Builder
	b.WriteString(fmt.Sprintf("**%s** of run `%s`: %s", s.Path, runID, s.Type))
	if s.Type != plan.StepPipeline {
		b.WriteString(fmt.Sprintf(" on `%s`", computeName(s.Compute)))
	}
	b.WriteString("\n\n")
	switch {
	case s.Type == plan.StepSweep && s.Sweep != nil:
		writeSweep(&b, s)
	case s.Command != nil:
		writeCommand(&b, *s.Command)
	case s.Parallel != nil:
		writeParallel(&b, *s.Parallel)
	case s.Pipeline != nil:
		writeSteps(&b, *s.Pipeline)
		b.WriteString("\n")
	}
	writeInputs(&b, "Inputs", inputs)
	var outs, logs []string
	for _, o := range outputs {
		switch {
		case o.Name == plan.ArtifactsOutput && o.Path != "":
			logs = append(logs, "`"+o.Path+"`")
		case o.Path != "":
			outs = append(outs, fmt.Sprintf("- `%s`: `%s`", o.Name, o.Path))
		default:
			outs = append(outs, fmt.Sprintf("- `%s`", o.Name))
		}
	}
	if len(logs) == 0 && runsOnCompute(s.Type) {
		logs = append(logs, "`"+stepio.StepArtifactsURI(datastore(ds), runID, s.Path)+"`")
	}
	if len(outs) > 0 {
		b.WriteString("**Outputs**\n\n" + strings.Join(outs, "\n") + "\n\n")
	}
	if len(logs) > 0 {
		where := "`user_logs/std_log.txt`"
		if s.Type == plan.StepParallel {
			where = "`logs/`"
		}
		b.WriteString(fmt.Sprintf("**Logs** in %s (%s); `porch job logs %s %s` prints them\n", logs[0], where, runID, s.Path))
	}
	return cut(b.String(), maxDetails)
}

func writeCommand(b *strings.Builder, c plan.Command) {
	src := c.Template.Source
	if len(src) > maxCodeText {
		src = src[:maxCodeText] + "\n…"
	}
	b.WriteString(fmt.Sprintf("```sh\n%s\n```\n\n", strings.ReplaceAll(src, "```", "'''")))
	if n := c.Resources.InstanceCount; n > 1 {
		b.WriteString(fmt.Sprintf("%d instances", n))
		if c.Distribution != nil {
			b.WriteString(fmt.Sprintf(", %s distribution", c.Distribution.Type))
		}
		b.WriteString("\n\n")
	}
}

func writeParallel(b *strings.Builder, p plan.Parallel) {
	size := p.MiniBatchSize
	if len(p.PartitionKeys) > 0 {
		size = "one per " + strings.Join(p.PartitionKeys, ", ")
	} else if size == "" {
		size = "the default"
	}
	per := "one per core"
	if p.MaxConcurrencyPerInstance > 0 {
		per = fmt.Sprint(p.MaxConcurrencyPerInstance)
	}
	b.WriteString(fmt.Sprintf("entry script `%s` over input `%s`; mini-batches: %s; %d instance(s) × %s process(es)",
		p.Task.EntryScript, p.InputData, size, p.Resources.Instances(), per))
	if p.Task.AppendRowTo != "" {
		b.WriteString(fmt.Sprintf("; results appended to `%s`", p.Task.AppendRowTo))
	}
	b.WriteString("\n\n")
}

func writeSweep(b *strings.Builder, s plan.Step) {
	sw := s.Sweep
	var names []string
	for _, p := range sw.SearchSpace {
		names = append(names, fmt.Sprintf("`%s` (%s)", p.Name, p.Kind))
	}
	b.WriteString(fmt.Sprintf("objective: %s `%s` · %s sampling over %s · at most %d trials, %d at once · each trial a %s\n\n",
		sw.Objective.Goal, sw.Objective.PrimaryMetric, sw.Sampling.Algorithm, strings.Join(names, ", "),
		sw.Limits.MaxTotalTrials, sw.Limits.MaxConcurrentTrials, trialType(s)))
	if sw.EarlyTermination != nil {
		b.WriteString(fmt.Sprintf("early termination: %s\n\n", sw.EarlyTermination.Policy))
	}
	if s.Command != nil {
		writeCommand(b, *s.Command)
	}
}
