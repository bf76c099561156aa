package compiler

import (
	"sort"
	"strings"

	"github.com/porch-pipelines/porch/compiler/plan"
)

// lowerSweep turns a checked sweep step's settings into the plan, and sets
// the step inputs the search space sets to plan.ValueSearchSpace.
func lowerSweep(st *plan.Step, s *stepAST) {
	sw := s.Sweep
	for i := range st.Inputs {
		in := &st.Inputs[i]
		if info, ok := sw.Space.Info[in.Name]; ok {
			in.Value = plan.Value{Kind: plan.ValueSearchSpace, Input: in.Name}
			in.Pos = info.Pos
		}
	}
	params := append([]plan.Parameter(nil), sw.Space.Params...)
	sort.SliceStable(params, func(i, j int) bool { return params[i].Name < params[j].Name })
	st.Sweep = &plan.Sweep{
		SearchSpace:      params,
		Sampling:         sw.Sampling,
		Objective:        sw.Objective,
		Limits:           sw.Limits,
		EarlyTermination: sw.Early,
	}
	if sw.MetricStep != nil {
		st.Sweep.MetricStep = strings.Trim(strings.TrimSpace(sw.MetricStep.Value), "/")
	}
}
