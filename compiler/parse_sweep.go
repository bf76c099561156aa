package compiler

import (
	"fmt"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/porch-pipelines/porch/compiler/plan"
)

// Keys of a sweep step (Azure ML's SweepSchema node with porch's
// metric_step), of a standalone sweep job and of their settings.
var (
	sweepSettingKeys = []string{"trial", "search_space", "sampling_algorithm", "objective", "limits", "early_termination"}
	sweepStepKeys    = append([]string{"type", "inputs", "outputs", "compute", "display_name", "description",
		"tags", "name", "metric_step", "identity", "queue_settings"}, sweepSettingKeys...)
	sweepStepSilent = []string{"experiment_name", "properties", "comment", "$schema"}
	sweepJobKeys    = append([]string{"$schema", "type", "name", "display_name", "experiment_name", "description",
		"tags", "inputs", "outputs", "compute", "resources", "identity", "queue_settings"}, sweepSettingKeys...)
	sweepJobSilent = []string{"properties", "services", "status", "creation_context",
		"id", "notification_setting"}
	trialJobKeys  = []string{"command", "code", "environment", "environment_variables", "resources", "distribution"}
	objectiveKeys = []string{"primary_metric", "goal"}
	sweepLimits   = []string{"max_total_trials", "max_concurrent_trials", "timeout", "trial_timeout"}
	samplingNames = []string{plan.SamplingRandom, plan.SamplingGrid, plan.SamplingBayesian}
	goals         = []string{plan.GoalMaximize, plan.GoalMinimize}
)

// Azure ML's defaults of a sweep (CLI v2 sweep job YAML schema).
const (
	defaultMaxTotalTrials     = 1000
	defaultSweepTimeout       = 5184000 // 60 days
	defaultEvaluationInterval = 1
)

// sweepAST is a sweep's settings, checked where they stand alone; the
// trial is the step's Component.
type sweepAST struct {
	// Pos is the sweep step's name, or the top of a sweep job file.
	Pos         plan.Pos
	Space       searchSpace
	Sampling    plan.Sampling
	SamplingPos plan.Pos
	Objective   plan.Objective
	Limits      plan.SweepLimits
	Early       *plan.EarlyTermination
	MetricStep  *scalarAST
}

// parseSweepStep parses a type: sweep entry of jobs:. It returns nil when
// the trial cannot be loaded.
func (p *parser) parseSweepStep(name string, e entry, s *stepAST) *stepAST {
	f := p.fields(name, e.val, fmt.Sprintf("step %q", s.Name), sweepStepKeys, sweepStepSilent)
	s.Type = plan.StepSweep
	s.DisplayName = p.str(name, f["display_name"])
	s.Compute = p.scalar(name, f["compute"])
	s.Identity = p.parseIdentity(name, f["identity"])
	s.Tier = p.parseQueueSettings(name, f)
	s.Sweep = p.parseSweepSettings(name, s.Pos, f)
	s.Sweep.MetricStep = p.scalar(name, f["metric_step"])
	if in, ok := f["inputs"]; ok {
		s.Inputs = p.parseInputs(name, in.val, ctxBind)
	}
	if out, ok := f["outputs"]; ok {
		s.Outputs = p.parseOutputs(name, out.val)
	}
	trial, ok := f["trial"]
	if !ok {
		p.errorf(s.Pos, "add trial: naming a command component file (./train.yml) or writing a command component inline",
			"sweep step %q has no trial", s.Name)
		return nil
	}
	if s.Component = p.parseTrial(name, trial); s.Component == nil {
		return nil
	}
	return s
}

// parseTrial loads a sweep step's trial: a command component (a file, a
// file: reference or inline) or, as porch allows, a pipeline component.
func (p *parser) parseTrial(name string, e entry) *componentAST {
	if isNull(e.val) {
		p.errorf(nodePos(name, e.key), "name a command component file (./train.yml) or write the component inline", "trial is empty")
		return nil
	}
	comp := p.parseComponentRef(name, e)
	if comp == nil {
		return nil
	}
	if comp.Type != plan.StepCommand && comp.Type != plan.StepPipeline {
		p.errorf(nodePos(name, e.val), "point trial: at a command component (type: command), or at a pipeline component",
			"trial must be a command or pipeline component, found a %s component", comp.Type)
		return nil
	}
	return comp
}

// parseSweepSettings reads what a sweep step and a sweep job share.
func (p *parser) parseSweepSettings(name string, at plan.Pos, f map[string]entry) *sweepAST {
	sw := &sweepAST{Pos: at}
	sw.Space = p.parseSearchSpace(name, at, f["search_space"])
	sw.Sampling, sw.SamplingPos = p.parseSampling(name, f["sampling_algorithm"])
	if sw.SamplingPos.File == "" {
		sw.SamplingPos = at
	}
	sw.Objective = p.parseObjective(name, at, f["objective"])
	sw.Limits = p.parseSweepLimits(name, f["limits"])
	sw.Early = p.parseEarlyTermination(name, f["early_termination"])
	if sw.Early != nil && sw.Sampling.Algorithm == plan.SamplingBayesian {
		p.warnf(nodePos(name, f["early_termination"].key), "remove early_termination, or sample with random or grid",
			"Azure ML's bayesian sampling takes no early termination policy: porch applies it, but this file fails on Azure")
	}
	p.checkSampling(sw)
	return sw
}

// parseSampling reads sampling_algorithm: a name or {type, seed, rule,
// logbase}; random when absent.
func (p *parser) parseSampling(name string, e entry) (plan.Sampling, plan.Pos) {
	out := plan.Sampling{Algorithm: plan.SamplingRandom, Rule: "random"}
	if e.key == nil || isNull(e.val) {
		return out, plan.Pos{}
	}
	pos := nodePos(name, e.val)
	var f map[string]entry
	alg := e.val
	switch e.val.Kind {
	case yaml.ScalarNode:
	case yaml.MappingNode:
		f = p.fields(name, e.val, "sampling_algorithm", []string{"type", "seed", "rule", "logbase"}, nil)
		t, ok := f["type"]
		if !ok || isNull(t.val) || t.val.Kind != yaml.ScalarNode {
			p.errorf(pos, "add type: random, grid or bayesian", "sampling_algorithm has no type")
			return out, pos
		}
		alg = t.val
	default:
		p.errorf(pos, "write random, grid or bayesian, or {type: random, seed: 1}", "sampling_algorithm must be a name or a mapping, found %s", kindName(e.val))
		return out, pos
	}
	out.Algorithm = strings.ToLower(strings.TrimSpace(alg.Value))
	if !contains(samplingNames, out.Algorithm) {
		p.errorf(nodePos(name, alg), withHint("use random, grid or bayesian", suggest(alg.Value, samplingNames)),
			"unknown sampling algorithm %q", alg.Value)
		return out, pos
	}
	if out.Algorithm != plan.SamplingRandom {
		out.Rule = ""
		for _, k := range []string{"seed", "rule", "logbase"} {
			if x, ok := f[k]; ok {
				p.warnf(nodePos(name, x.key), "porch ignores it", "%s sampling takes no %s; only random sampling does", out.Algorithm, k)
			}
		}
		return out, pos
	}
	p.parseRandomSettings(name, f, &out)
	return out, pos
}

// parseRandomSettings reads random sampling's seed, rule and logbase.
func (p *parser) parseRandomSettings(name string, f map[string]entry, out *plan.Sampling) {
	if s := p.scalar(name, f["seed"]); s != nil && !p.bindingNotLiteral(s.Pos, "seed", s.Value) {
		if n, ok := parseInt(s.Value); ok {
			out.Seed = &n
		} else {
			p.errorf(s.Pos, "write a whole number", "seed must be an integer, found %q", s.Value)
		}
	}
	if s := p.scalar(name, f["rule"]); s != nil {
		rule := strings.ToLower(strings.TrimSpace(s.Value))
		if rule != "random" && rule != "sobol" {
			p.errorf(s.Pos, withHint("use random or sobol", suggest(s.Value, []string{"random", "sobol"})), "unknown random sampling rule %q", s.Value)
		}
		out.Rule = rule
	}
	if s := p.scalar(name, f["logbase"]); s != nil {
		v := strings.TrimSpace(s.Value)
		if x, ok := parseNumber(v); v != "e" && (!ok || x <= 0) {
			p.errorf(s.Pos, "write e or a number above 0", "logbase must be e or a positive number, found %q", s.Value)
		}
		out.Logbase = v
	}
}

// parseObjective reads objective: {primary_metric, goal}, which a sweep must have.
func (p *parser) parseObjective(name string, at plan.Pos, e entry) plan.Objective {
	var o plan.Objective
	const want = "add objective: {primary_metric: <a metric the trials log>, goal: maximize or minimize}"
	if e.key == nil {
		p.errorf(at, want, "sweep has no objective")
		return o
	}
	if !p.mapping(name, e) {
		p.errorf(nodePos(name, e.key), want, "objective is empty")
		return o
	}
	f := p.fields(name, e.val, "objective", objectiveKeys, nil)
	if s := p.scalar(name, f["primary_metric"]); s != nil && strings.TrimSpace(s.Value) != "" {
		o.PrimaryMetric = strings.TrimSpace(s.Value)
	} else {
		p.errorf(nodePos(name, e.key), "add primary_metric: naming the metric the trials log (mlflow.log_metric)", "objective has no primary_metric")
	}
	g := p.scalar(name, f["goal"])
	if g == nil {
		p.errorf(nodePos(name, e.key), "add goal: maximize or goal: minimize", "objective has no goal")
		return o
	}
	o.Goal = strings.ToLower(strings.TrimSpace(g.Value))
	if !contains(goals, o.Goal) {
		p.errorf(g.Pos, withHint("use maximize or minimize", suggest(g.Value, goals)), "unknown goal %q", g.Value)
	}
	return o
}

// parseSweepLimits reads limits:, filling Azure ML's defaults.
func (p *parser) parseSweepLimits(name string, e entry) plan.SweepLimits {
	l := plan.SweepLimits{MaxTotalTrials: defaultMaxTotalTrials, TimeoutSeconds: defaultSweepTimeout}
	var concurrent optInt
	if e.key != nil && p.mapping(name, e) {
		f := p.fields(name, e.val, "limits", sweepLimits, nil)
		l.MaxTotalTrials = p.intRange(name, f["max_total_trials"], "limits.max_total_trials", 1, -1).or(defaultMaxTotalTrials)
		concurrent = p.intRange(name, f["max_concurrent_trials"], "limits.max_concurrent_trials", 1, -1)
		l.TimeoutSeconds = p.intRange(name, f["timeout"], "limits.timeout", 1, -1).or(defaultSweepTimeout)
		l.TrialTimeoutSeconds = p.intRange(name, f["trial_timeout"], "limits.trial_timeout", 1, -1).or(0)
	}
	l.MaxConcurrentTrials = concurrent.or(l.MaxTotalTrials)
	return l
}

// checkSampling refuses parameters the sampling algorithm cannot draw:
// grid takes only choices, bayesian choice, uniform and quniform.
func (p *parser) checkSampling(sw *sweepAST) {
	var allowed []string
	var detail string
	switch sw.Sampling.Algorithm {
	case plan.SamplingGrid:
		allowed, detail = []string{plan.ParamChoice}, "grid sampling enumerates choices: make %q a choice of values, or use random or bayesian sampling"
	case plan.SamplingBayesian:
		allowed = []string{plan.ParamChoice, plan.ParamUniform, plan.ParamQUniform}
		detail = "bayesian sampling takes choice, uniform and quniform parameters: change %q, or use random sampling"
	default:
		return
	}
	walkParams(sw.Space.Params, func(prm plan.Parameter) {
		if !contains(allowed, prm.Kind) {
			p.errorf(prm.Pos, fmt.Sprintf(detail, prm.Name), "%s sampling cannot draw %s parameter %q", sw.Sampling.Algorithm, prm.Kind, prm.Name)
		}
	})
}

// Keys of each early termination policy.
var policyKeys = map[string][]string{
	plan.PolicyBandit:              {"type", "evaluation_interval", "delay_evaluation", "slack_factor", "slack_amount"},
	plan.PolicyMedianStopping:      {"type", "evaluation_interval", "delay_evaluation"},
	plan.PolicyTruncationSelection: {"type", "evaluation_interval", "delay_evaluation", "truncation_percentage", "exclude_finished_jobs"},
}

var policyNames = []string{plan.PolicyBandit, plan.PolicyMedianStopping, plan.PolicyTruncationSelection}

// parseEarlyTermination reads early_termination:; nil when absent.
func (p *parser) parseEarlyTermination(name string, e entry) *plan.EarlyTermination {
	if e.key == nil || !p.mapping(name, e) {
		return nil
	}
	pos := nodePos(name, e.key)
	t := lookup(e.val, "type")
	if t == nil || isNull(t.val) || t.val.Kind != yaml.ScalarNode {
		p.errorf(pos, "add type: bandit, median_stopping or truncation_selection", "early_termination has no type")
		return nil
	}
	et := &plan.EarlyTermination{Policy: strings.ToLower(strings.TrimSpace(t.val.Value))}
	keys, ok := policyKeys[et.Policy]
	if !ok {
		p.errorf(nodePos(name, t.val), withHint("use bandit, median_stopping or truncation_selection", suggest(t.val.Value, policyNames)),
			"unknown early termination policy %q", t.val.Value)
		return nil
	}
	f := p.fields(name, e.val, et.Policy+" policy", keys, nil)
	et.EvaluationInterval = p.intRange(name, f["evaluation_interval"], "evaluation_interval", 1, -1).or(defaultEvaluationInterval)
	et.DelayEvaluation = p.intRange(name, f["delay_evaluation"], "delay_evaluation", 0, -1).or(0)
	switch et.Policy {
	case plan.PolicyBandit:
		p.parseSlack(name, pos, f, et)
	case plan.PolicyTruncationSelection:
		pct := p.intRange(name, f["truncation_percentage"], "truncation_percentage", 1, 99)
		if _, given := f["truncation_percentage"]; !given {
			p.errorf(pos, "add truncation_percentage: the percentage of the lowest-performing trials to stop at each evaluation, from 1 to 99",
				"truncation_selection policy has no truncation_percentage")
		}
		et.TruncationPercentage = pct.V
		et.ExcludeFinishedJobs = p.boolean(name, f["exclude_finished_jobs"])
	}
	return et
}

// parseSlack reads a bandit policy's slack: exactly one of slack_factor
// and slack_amount.
func (p *parser) parseSlack(name string, pos plan.Pos, f map[string]entry, et *plan.EarlyTermination) {
	read := func(key string) (float64, *scalarAST) {
		s := p.scalar(name, f[key])
		if s == nil {
			return 0, nil
		}
		v, ok := parseNumber(s.Value)
		if !ok || v < 0 {
			p.errorf(s.Pos, "write a number of at least 0", "%s must be a number of at least 0, found %q", key, s.Value)
		}
		return v, s
	}
	factor, fs := read("slack_factor")
	amount, as := read("slack_amount")
	switch {
	case fs == nil && as == nil:
		p.errorf(pos, "add slack_factor: (a ratio of the best metric, such as 0.1) or slack_amount: (an absolute distance)",
			"bandit policy needs slack_factor or slack_amount")
	case fs != nil && as != nil:
		p.errorf(as.Pos, "keep one: slack_factor is a ratio of the best metric, slack_amount an absolute distance",
			"bandit policy has both slack_factor and slack_amount")
	}
	et.SlackFactor, et.SlackAmount = factor, amount
}
