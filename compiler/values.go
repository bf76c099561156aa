package compiler

import (
	"math"
	"strconv"
	"strings"
)

// parseBool accepts YAML's and Python's spellings of true and false.
func parseBool(s string) (bool, bool) {
	switch strings.TrimSpace(s) {
	case "true", "True", "TRUE":
		return true, true
	case "false", "False", "FALSE":
		return false, true
	}
	return false, false
}

// parseInt accepts a whole number, also written as 1e3 or 3.0.
func parseInt(s string) (int64, bool) {
	t := strings.ReplaceAll(strings.TrimSpace(s), "_", "")
	if n, err := strconv.ParseInt(t, 10, 64); err == nil {
		return n, true
	}
	f, err := strconv.ParseFloat(t, 64)
	if err != nil || f != math.Trunc(f) || math.IsInf(f, 0) || math.Abs(f) > 1<<53 {
		return 0, false
	}
	return int64(f), true
}

// parseNumber accepts any finite number, YAML's .inf and .nan aside.
func parseNumber(s string) (float64, bool) {
	t := strings.ReplaceAll(strings.TrimSpace(s), "_", "")
	f, err := strconv.ParseFloat(t, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, false
	}
	return f, true
}

// literalType infers an input's type from a YAML literal's tag.
func literalType(s *scalarAST) string {
	switch s.Tag {
	case "!!int":
		return "integer"
	case "!!float":
		return "number"
	case "!!bool":
		return "boolean"
	}
	return "string"
}

// inferType infers a type from a string given on the command line.
func inferType(v string) string {
	if _, err := strconv.ParseInt(v, 10, 64); err == nil {
		return "integer"
	}
	if _, ok := parseNumber(v); ok {
		return "number"
	}
	if _, ok := parseBool(v); ok {
		return "boolean"
	}
	return "string"
}

// literalProblem says why a literal does not fit a declared input, "" when
// it fits: the wrong type, outside min/max, not one of enum.
func literalProblem(in *inputAST, v string) string {
	prob, _ := literalFit(in, v)
	return prob
}

// literalFit is literalProblem, also saying whether the problem is the
// value's type, and not a whole number for an integer input only (which
// Azure ML rounds down in a default, int(float(v))).
func literalFit(in *inputAST, v string) (prob string, wrongType bool) {
	switch in.Type {
	case "integer":
		if _, ok := parseInt(v); !ok {
			if _, isNum := parseNumber(v); isNum {
				return "is not a whole number", false
			}
			return "is not an integer", true
		}
	case "number":
		if _, ok := parseNumber(v); !ok {
			return "is not a number", true
		}
	case "boolean":
		if _, ok := parseBool(v); !ok {
			return "is not a boolean (true or false)", true
		}
	}
	if in.Type == "integer" || in.Type == "number" {
		f, _ := parseNumber(v)
		if in.Min != nil {
			if lo, ok := parseNumber(in.Min.Value); ok && f < lo {
				return "is below the minimum " + in.Min.Value, false
			}
		}
		if in.Max != nil {
			if hi, ok := parseNumber(in.Max.Value); ok && f > hi {
				return "is above the maximum " + in.Max.Value, false
			}
		}
	}
	if len(in.Enum) > 0 {
		var opts []string
		for _, e := range in.Enum {
			if e.Value == v {
				return "", false
			}
			opts = append(opts, strconv.Quote(e.Value))
		}
		return "is not one of " + strings.Join(opts, ", "), false
	}
	return "", false
}

// asWritten is the detail of a value that does not fit its input but which
// Azure ML's client lets through: porch does the same.
const asWritten = "porch passes the value as written, as Azure ML does; change it, or the declaration, if the command needs them to agree"

// article prefixes a type name with "a" or "an".
func article(t string) string {
	if t != "" && strings.ContainsRune("aeiou", rune(t[0])) {
		return "an " + t
	}
	return "a " + t
}
