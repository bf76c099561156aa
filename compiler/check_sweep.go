package compiler

import (
	"fmt"
	"strings"

	"github.com/porch-pipelines/porch/compiler/plan"
	"github.com/porch-pipelines/porch/sweep"
)

// checkSweep checks a sweep step against its trial: every name the search
// space sets is an input of the trial of a type its values fit, and
// metric_step names a step of a pipeline trial. It marks the inputs the
// search space sets as bound.
func (c *checker) checkSweep(s *stepAST, decls map[string]*inputAST, bound map[string]bool) {
	sw := s.Sweep
	if s.Component.SweepJob {
		c.checkTrialJob(s.Component, sw)
	}
	for _, n := range sw.Space.Names {
		info := sw.Space.Info[n]
		decl, ok := decls[n]
		if !ok {
			c.errorf(info.Pos, withHint("the trial declares "+list(names(decls)), suggest(n, names(decls))),
				"search_space parameter %q names no input of the trial", n)
			continue
		}
		if bound[n] {
			c.warnf(info.Pos, fmt.Sprintf("remove %q from the step's inputs:", n),
				"input %q is set under inputs: and searched under search_space:; the search space wins", n)
		}
		bound[n] = true
		c.checkParamType(n, info, decl, sw.Space.Params)
	}
	c.checkDraws(sw)
	c.checkMetricStep(s)
}

// checkDraws refuses a parameter that can draw a number too large to
// carry (loguniform up to e^711, a uniform from -1.7e308 to 1.7e308): the
// sweep would pass validation and fail at its first trials.
func (c *checker) checkDraws(sw *sweepAST) {
	walkParams(sw.Space.Params, func(prm plan.Parameter) {
		if summary, todo := sweep.Unencodable(prm, sw.Sampling.Logbase); summary != "" {
			c.errorf(prm.Pos, todo, "%s", summary)
		}
	})
}

// checkParamType checks that the values a parameter takes fit the trial
// input it sets: each literal of a choice against the declaration (type,
// min, max, enum), the other kinds by the type of what they draw.
func (c *checker) checkParamType(n string, info paramInfo, decl *inputAST, params []plan.Parameter) {
	if decl.Type == "" {
		return
	}
	if !isPrimitive(decl.Type) {
		c.errorf(info.Pos, "search string, integer, number or boolean inputs; fix data inputs under inputs:",
			"search_space parameter %q sets input %q of type %s", n, n, decl.Type)
		return
	}
	walkParams(params, func(prm plan.Parameter) {
		if prm.Name != n {
			return
		}
		if prm.Kind != plan.ParamChoice {
			if !compatible(kindType(prm.Kind), decl.Type) {
				c.errorf(prm.Pos, fmt.Sprintf("make the input a number, or draw %s values (randint, or a choice)", decl.Type),
					"%s parameter %q draws numbers but input %q is %s", prm.Kind, n, n, decl.Type)
			}
			return
		}
		for _, ch := range prm.Choices {
			if ch.Nested != nil && decl.Type != "string" {
				c.errorf(prm.Pos, "give the input type string, or choose among scalars",
					"choice parameter %q has mapping values but input %q is %s", n, n, decl.Type)
				return
			}
			if ch.Nested != nil {
				continue
			}
			if prob := literalProblem(decl, ch.Literal); prob != "" {
				c.errorf(prm.Pos, "change the value to fit the trial input's declaration",
					"choice parameter %q: value %q %s", n, ch.Literal, prob)
			}
		}
	})
}

// kindType is the type of the values a non-choice parameter draws.
func kindType(kind string) string {
	if kind == plan.ParamRandint {
		return "integer"
	}
	return "number"
}

// checkTrialJob checks a standalone sweep job's command: its
// ${{search_space.x}} name parameters, its ${{inputs.x}} the job's inputs.
func (c *checker) checkTrialJob(comp *componentAST, sw *sweepAST) {
	ins := append([]*inputAST(nil), comp.Inputs...)
	params := sw.Space.Names
	for _, r := range comp.Command.SearchRefs {
		if _, ok := sw.Space.Info[r.Name]; ok {
			continue
		}
		c.errorf(r.Pos, withHint("add it under search_space:", suggest(r.Name, params)),
			"command uses search_space.%s, which the search space does not define", r.Name)
		// Declared here only so that checkTemplate does not report it twice.
		ins = append(ins, &inputAST{Name: r.Name})
	}
	c.checkOutputDecls(comp.Outputs)
	c.checkTemplate(comp.Command, ins, comp.Outputs, "sweep job")
}

// checkMetricStep checks metric_step: a step path inside a pipeline trial.
func (c *checker) checkMetricStep(s *stepAST) {
	ms := s.Sweep.MetricStep
	if ms == nil {
		return
	}
	if s.Component.Type != plan.StepPipeline {
		c.errorf(ms.Pos, "remove metric_step: a command trial reports its metrics itself",
			"metric_step applies only to a pipeline trial, but the trial of %q is a command", s.Name)
		return
	}
	pl := s.Component.Pipeline
	segs := strings.Split(strings.Trim(strings.TrimSpace(ms.Value), "/"), "/")
	for i, seg := range segs {
		var found *stepAST
		var have []string
		if pl != nil {
			for _, t := range pl.Steps {
				have = append(have, t.Name)
				if t.Name == seg {
					found = t
				}
			}
		}
		switch {
		case found == nil:
			c.errorf(ms.Pos, withHint("the trial pipeline has steps "+list(have), suggest(seg, have)),
				"metric_step %q names no step of the trial pipeline", ms.Value)
			return
		case i < len(segs)-1 && found.Component.Type != plan.StepPipeline:
			c.errorf(ms.Pos, fmt.Sprintf("step %q is a %s step; write its path only", seg, found.Type),
				"metric_step %q goes inside step %q, which is not a pipeline", ms.Value, seg)
			return
		case i < len(segs)-1:
			pl = found.Component.Pipeline
		}
	}
}
