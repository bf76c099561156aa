package compiler

import (
	"strings"

	"github.com/porch-pipelines/porch/compiler/plan"
)

// Azure ML's queue_settings (azure-ai-ml's QueueSettingsSchema): job_tier
// and priority, both matched without regard to case.
var (
	queueSettingsKeys = []string{"job_tier", "priority"}
	// jobTiers are the tiers Azure accepts; "null" is the compute's own.
	jobTiers      = []string{"null", plan.TierSpot, "basic", "standard", "premium"}
	jobPriorities = []string{"low", "medium", "high"}
)

// parseQueueSettings reads a job's queue_settings and returns its job tier
// in lower case, "" for none (or null). porch gives spot its meaning
// (preemptible workers); the other tiers and the priority are checked and
// then run like any step.
func (p *parser) parseQueueSettings(name string, f map[string]entry) string {
	e, ok := f["queue_settings"]
	if !ok || !p.mapping(name, e) {
		return ""
	}
	qf := p.fields(name, e.val, "queue_settings", queueSettingsKeys, nil)
	tier := p.oneOf(name, qf["job_tier"], "job tier", jobTiers)
	p.oneOf(name, qf["priority"], "priority", jobPriorities)
	if tier == "null" {
		return ""
	}
	return tier
}

// oneOf reads a scalar that must be one of allowed, case-insensitively,
// and returns it in lower case; "" when absent or wrong (after reporting).
func (p *parser) oneOf(name string, e entry, what string, allowed []string) string {
	s := p.scalar(name, e)
	if s == nil {
		return ""
	}
	v := strings.ToLower(strings.TrimSpace(s.Value))
	if !contains(allowed, v) {
		p.errorf(s.Pos, withHint("write one of "+strings.Join(allowed, ", "), suggest(v, allowed)),
			"unknown %s %q in queue_settings", what, s.Value)
		return ""
	}
	return v
}

// warnPipelineQueueSettings says that a pipeline job's own queue_settings
// reach none of its steps: Azure ML reads queue_settings per job, and a
// pipeline's steps are jobs of their own.
func (p *parser) warnPipelineQueueSettings(name string, f map[string]entry) {
	if e, ok := f["queue_settings"]; ok {
		p.warnf(nodePos(name, e.key), "set queue_settings: job_tier on each step that should run on spot workers",
			"queue_settings of a pipeline job apply to none of its steps")
	}
}

// applyTier gives a lowered step its job tier: a command's (a command
// sweep's trials too) and a parallel step's resources carry it.
func applyTier(st *plan.Step, tier string) {
	if tier == "" {
		return
	}
	if st.Command != nil {
		st.Command.Resources.JobTier = tier
	}
	if st.Parallel != nil {
		st.Parallel.Resources.JobTier = tier
	}
}
