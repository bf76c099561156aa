package sweep

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/porch-pipelines/porch/compiler/plan"
)

// Validate checks a search space against a sampling algorithm as Azure ML
// does: grid takes only choice parameters, bayesian only choice, uniform and
// quniform, and every parameter's bounds must make sense. Errors start with
// the parameter's position ("file:line:col: ") when it has one.
func Validate(space []plan.Parameter, s plan.Sampling) error {
	if err := validateSampling(s); err != nil {
		return err
	}
	if len(space) == 0 {
		return fmt.Errorf("the search space is empty: add at least one parameter under search_space")
	}
	if err := checkNames(space); err != nil {
		return err
	}
	return checkParams(space, s)
}

func validateSampling(s plan.Sampling) error {
	switch s.Algorithm {
	case plan.SamplingRandom:
	case plan.SamplingGrid, plan.SamplingBayesian:
		if s.Rule != "" || s.Logbase != "" {
			return fmt.Errorf("sampling algorithm %q takes no rule or logbase: they belong to type: random", s.Algorithm)
		}
		return nil
	default:
		return fmt.Errorf("unknown sampling algorithm %q: use random, grid or bayesian", s.Algorithm)
	}
	if s.Rule != "" && s.Rule != "random" && s.Rule != "sobol" {
		return fmt.Errorf("unknown random sampling rule %q: use random or sobol", s.Rule)
	}
	_, err := parseLogbase(s.Logbase)
	return err
}

// parseLogbase reads random's logbase: "" or "e" for e, else a positive
// number other than 1.
func parseLogbase(s string) (float64, error) {
	if s == "" || s == "e" {
		return math.E, nil
	}
	b, err := strconv.ParseFloat(s, 64)
	if err != nil || !(b > 0) || b == 1 || math.IsInf(b, 0) {
		return 0, fmt.Errorf("logbase %q is not a valid base: use e or a positive number other than 1", s)
	}
	return b, nil
}

// checkNames makes sure no two parameters that can be set in the same trial
// share a name: a dict entry's key must differ from every other parameter's
// name and from the keys of other choices' dicts.
func checkNames(ps []plan.Parameter) error {
	seen := map[string]plan.Pos{}
	return collectNames(ps, seen)
}

func collectNames(ps []plan.Parameter, seen map[string]plan.Pos) error {
	for _, p := range ps {
		if p.Name == "" {
			return paramError(p, "a search-space parameter has no name")
		}
		if prev, dup := seen[p.Name]; dup {
			where := ""
			if prev.File != "" {
				where = " (also at " + posText(prev) + ")"
			}
			return paramError(p, "parameter %q is set twice in one trial%s: rename one of them", p.Name, where)
		}
		seen[p.Name] = p.Pos
	}
	for _, p := range ps {
		// Each dict value of a choice may reuse the keys of its sibling
		// values (only one is active), but none of the names outside.
		union := map[string]plan.Pos{}
		for _, c := range p.Choices {
			if c.Nested == nil {
				continue
			}
			branch := copyNames(seen)
			if err := collectNames(c.Nested, branch); err != nil {
				return err
			}
			for k, v := range branch {
				if _, outer := seen[k]; !outer {
					union[k] = v
				}
			}
		}
		for k, v := range union {
			seen[k] = v
		}
	}
	return nil
}

func copyNames(m map[string]plan.Pos) map[string]plan.Pos {
	c := make(map[string]plan.Pos, len(m))
	for k, v := range m {
		c[k] = v
	}
	return c
}

func checkParams(ps []plan.Parameter, s plan.Sampling) error {
	for _, p := range ps {
		if err := checkAllowed(p, s.Algorithm); err != nil {
			return err
		}
		if err := checkParam(p); err != nil {
			return err
		}
		if summary, todo := Unencodable(p, s.Logbase); summary != "" {
			return paramError(p, "%s: %s", summary, todo)
		}
		for _, c := range p.Choices {
			if err := checkParams(c.Nested, s); err != nil {
				return err
			}
		}
	}
	return nil
}

func checkAllowed(p plan.Parameter, algorithm string) error {
	switch algorithm {
	case plan.SamplingGrid:
		if p.Kind != plan.ParamChoice {
			return paramError(p, "grid sampling takes only choice parameters, and %q is %s: list its values with type: choice, or use random sampling", p.Name, p.Kind)
		}
	case plan.SamplingBayesian:
		switch p.Kind {
		case plan.ParamChoice, plan.ParamUniform, plan.ParamQUniform:
		default:
			return paramError(p, "bayesian sampling takes only choice, uniform and quniform parameters, and %q is %s: change its type, or use random sampling", p.Name, p.Kind)
		}
	}
	return nil
}

func checkParam(p plan.Parameter) error {
	switch p.Kind {
	case plan.ParamChoice:
		if len(p.Choices) == 0 {
			return paramError(p, "choice %q has no values: list at least one under values", p.Name)
		}
	case plan.ParamRandint:
		if p.Upper < 1 {
			return paramError(p, "randint %q needs upper of at least 1 (values are 0..upper-1), found %d", p.Name, p.Upper)
		}
	case plan.ParamUniform, plan.ParamLogUniform, plan.ParamQUniform, plan.ParamQLogUniform:
		if !finite(p.Min) || !finite(p.Max) || p.Min > p.Max {
			return paramError(p, "%s %q needs min_value at most max_value, found %s and %s", p.Kind, p.Name, formatFloat(p.Min), formatFloat(p.Max))
		}
	case plan.ParamNormal, plan.ParamLogNormal, plan.ParamQNormal, plan.ParamQLogNormal:
		if !finite(p.Mu) || !finite(p.Sigma) || p.Sigma < 0 {
			return paramError(p, "%s %q needs a finite mu and a sigma of at least 0, found mu %s and sigma %s", p.Kind, p.Name, formatFloat(p.Mu), formatFloat(p.Sigma))
		}
	default:
		return paramError(p, "parameter %q has unknown type %q: use one of %s", p.Name, p.Kind, strings.Join(kinds, ", "))
	}
	if strings.HasPrefix(p.Kind, "q") && !(p.Q > 0 && finite(p.Q)) {
		return paramError(p, "%s %q needs q above 0, found %s", p.Kind, p.Name, formatFloat(p.Q))
	}
	return nil
}

var kinds = []string{
	plan.ParamChoice, plan.ParamRandint, plan.ParamUniform, plan.ParamLogUniform, plan.ParamQUniform,
	plan.ParamQLogUniform, plan.ParamNormal, plan.ParamLogNormal, plan.ParamQNormal, plan.ParamQLogNormal,
}

func finite(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }

func paramError(p plan.Parameter, format string, args ...any) error {
	msg := fmt.Sprintf(format, args...)
	if p.Pos.File != "" {
		return fmt.Errorf("%s: %s", posText(p.Pos), msg)
	}
	return fmt.Errorf("%s", msg)
}

// posText is file:line:col, without the parts that are unknown.
func posText(p plan.Pos) string {
	s := p.File
	if p.Line > 0 {
		s += ":" + strconv.Itoa(p.Line)
		if p.Col > 0 {
			s += ":" + strconv.Itoa(p.Col)
		}
	}
	return s
}
