package sweep

import (
	"fmt"
	"math"

	"github.com/porch-pipelines/porch/compiler/plan"
)

// Unencodable says why parameter p can draw a value that is not a finite
// number, with logbase the random sampling's logbase ("" for e): a trial's
// values travel as JSON and on command lines, which carry no ±Inf or NaN,
// so such a sweep would fail at its first trials. It returns a summary and
// what to do, or "" and "" when every draw is finite. The extremes are
// checked as the samplers draw them: a uniform form's min_value and
// max_value (and the width and midpoint between them), a normal form's
// mu ± 8.2 sigma (the farthest a draw reaches), each through the log and
// the q-rounding of its form.
func Unencodable(p plan.Parameter, logbase string) (summary, todo string) {
	base, err := parseLogbase(logbase)
	if err != nil {
		return "", "" // reported as a bad logbase
	}
	var lo, hi float64
	switch p.Kind {
	case plan.ParamUniform, plan.ParamLogUniform, plan.ParamQUniform, plan.ParamQLogUniform:
		if !finite(p.Max-p.Min) || !finite(p.Max+p.Min) {
			return fmt.Sprintf("%s parameter %q spans %s to %s, wider than a number holds (about ±%s)",
					p.Kind, p.Name, formatFloat(p.Min), formatFloat(p.Max), largest),
				"narrow min_value and max_value: their sum and difference must stay within ±" + largest
		}
		lo, hi = p.Min, p.Max
	case plan.ParamNormal, plan.ParamLogNormal, plan.ParamQNormal, plan.ParamQLogNormal:
		z := normalQuantile(1)
		lo, hi = p.Mu-p.Sigma*z, p.Mu+p.Sigma*z
		if !finite(lo) || !finite(hi) {
			return fmt.Sprintf("%s parameter %q draws mu ± %.3g sigma (mu %s, sigma %s), beyond the largest number (about ±%s)",
					p.Kind, p.Name, z, formatFloat(p.Mu), formatFloat(p.Sigma), largest),
				"lower mu or sigma so that mu ± 8.2 sigma stays within ±" + largest
		}
	default:
		return "", ""
	}
	s := &space{base: base}
	for _, x := range []float64{hi, lo} {
		if v := s.numberValue(&param{Parameter: p}, x); finite(v.Number) {
			continue
		}
		if isLog(p.Kind) {
			limit := math.Log(math.MaxFloat64) / math.Log(base)
			return fmt.Sprintf("%s parameter %q draws up to %s^%.6g, beyond the largest number (about %s)",
					p.Kind, p.Name, baseName(logbase), x, largest),
				fmt.Sprintf("keep the exponents (%s) %s %.6g, or use a smaller logbase", exponents(p.Kind), aboveOrBelow(base), limit)
		}
		return fmt.Sprintf("%s parameter %q rounds %s to a multiple of q %s, beyond the largest number (about ±%s)",
				p.Kind, p.Name, formatFloat(x), formatFloat(p.Q), largest),
			"narrow the range, or raise q"
	}
	return "", ""
}

// largest is the largest float64, as messages write it.
const largest = "1.8e308"

func isLog(kind string) bool {
	switch kind {
	case plan.ParamLogUniform, plan.ParamQLogUniform, plan.ParamLogNormal, plan.ParamQLogNormal:
		return true
	}
	return false
}

// exponents names what a log form's exponents are set by.
func exponents(kind string) string {
	if kind == plan.ParamLogUniform || kind == plan.ParamQLogUniform {
		return "min_value and max_value"
	}
	return "mu ± 8.2 sigma"
}

// aboveOrBelow says which way a log form's exponents are bounded: below
// the limit for a base above 1, above it for a base below 1.
func aboveOrBelow(base float64) string {
	if base > 1 {
		return "at most"
	}
	return "at least"
}

func baseName(logbase string) string {
	if logbase == "" {
		return "e"
	}
	return logbase
}
