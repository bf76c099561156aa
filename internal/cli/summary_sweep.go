package cli

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/porch-pipelines/porch/compiler/plan"
)

// writeSweeps prints one line per sweep step, nested ones included: how it
// samples, what it optimises, how many trials run, over which parameters,
// and its early termination policy.
func writeSweeps(w io.Writer, p plan.Pipeline) {
	for _, s := range p.Steps {
		if s.Sweep != nil {
			fmt.Fprintf(w, "sweep %s: %s\n", s.Path, sweepText(s))
		}
		if s.Pipeline != nil {
			writeSweeps(w, *s.Pipeline)
		}
	}
}

// sweepText describes a sweep step's settings on one line.
func sweepText(s plan.Step) string {
	sw := s.Sweep
	parts := []string{samplingText(sw.Sampling), sw.Objective.Goal + " " + sw.Objective.PrimaryMetric}
	if sw.MetricStep != "" {
		parts = append(parts, "metric from step "+sw.MetricStep)
	}
	l := sw.Limits
	parts = append(parts, fmt.Sprintf("%d trials, %d at a time, timeout %ds", l.MaxTotalTrials, l.MaxConcurrentTrials, l.TimeoutSeconds))
	if l.TrialTimeoutSeconds > 0 {
		parts = append(parts, fmt.Sprintf("trial timeout %ds", l.TrialTimeoutSeconds))
	}
	params := make([]string, len(sw.SearchSpace))
	for i, prm := range sw.SearchSpace {
		params[i] = paramText(prm)
	}
	parts = append(parts, "parameters "+strings.Join(params, ", "))
	return strings.Join(parts, ", ") + "; early termination " + policyText(sw.EarlyTermination)
}

// samplingText is "random sampling (seed 42, sobol)", "grid sampling", ...
func samplingText(s plan.Sampling) string {
	var opts []string
	if s.Seed != nil {
		opts = append(opts, "seed "+strconv.FormatInt(*s.Seed, 10))
	}
	if s.Rule != "" && s.Rule != "random" {
		opts = append(opts, s.Rule)
	}
	if s.Logbase != "" {
		opts = append(opts, "logbase "+s.Logbase)
	}
	text := s.Algorithm + " sampling"
	if len(opts) > 0 {
		text += " (" + strings.Join(opts, ", ") + ")"
	}
	return text
}

// paramText is "lr uniform(0.01, 0.1)", "opt choice(adam, {...})", ...
func paramText(prm plan.Parameter) string {
	num := func(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }
	var args []string
	switch prm.Kind {
	case plan.ParamChoice:
		for _, c := range prm.Choices {
			if c.Nested != nil {
				nested := make([]string, len(c.Nested))
				for i, n := range c.Nested {
					nested[i] = paramText(n)
				}
				args = append(args, "{"+strings.Join(nested, ", ")+"}")
				continue
			}
			args = append(args, c.Literal)
		}
	case plan.ParamRandint:
		args = []string{strconv.Itoa(prm.Upper)}
	case plan.ParamNormal, plan.ParamLogNormal, plan.ParamQNormal, plan.ParamQLogNormal:
		args = []string{num(prm.Mu), num(prm.Sigma)}
	default:
		args = []string{num(prm.Min), num(prm.Max)}
	}
	if prm.Q != 0 {
		args = append(args, "q "+num(prm.Q))
	}
	return prm.Name + " " + prm.Kind + "(" + strings.Join(args, ", ") + ")"
}

// policyText describes an early termination policy, "none" for none.
func policyText(et *plan.EarlyTermination) string {
	if et == nil {
		return "none"
	}
	var opts []string
	switch {
	case et.Policy == plan.PolicyBandit && et.SlackAmount != 0:
		opts = append(opts, "slack_amount "+strconv.FormatFloat(et.SlackAmount, 'g', -1, 64))
	case et.Policy == plan.PolicyBandit:
		opts = append(opts, "slack_factor "+strconv.FormatFloat(et.SlackFactor, 'g', -1, 64))
	case et.Policy == plan.PolicyTruncationSelection:
		opts = append(opts, fmt.Sprintf("truncation %d%%", et.TruncationPercentage))
		if et.ExcludeFinishedJobs {
			opts = append(opts, "excluding finished trials")
		}
	}
	opts = append(opts, fmt.Sprintf("every %d, delay %d", et.EvaluationInterval, et.DelayEvaluation))
	return et.Policy + " (" + strings.Join(opts, ", ") + ")"
}
