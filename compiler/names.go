package compiler

import (
	"fmt"
	"regexp"
	"strings"
)

// Names follow Azure ML's rules (azure-ai-ml, sdk/ml/azure-ai-ml/azure/ai/ml):
// a step is a pipeline node, whose name must pass is_valid_node_name
// (_utils/utils.py, applied to the keys of jobs: by PipelineNodeNameStr in
// _schema/core/fields.py); inputs and outputs must match
// IOConstants.VALID_KEY_PATTERN (constants/_component.py), which allows
// dotted parameter groups, and Component._validate_io_names refuses two
// names that are equal ignoring case. Names are also folder names and
// parts of workflow ids, which is why porch checks them.
var (
	stepNameRE = regexp.MustCompile(`^[a-z_][a-z0-9_]*$`)
	ioNameRE   = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$`)
	// jobNameRE is what a sweep job's name must be to name its one step:
	// Azure ML's resource names, without dots or slashes.
	jobNameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]*$`)
)

const (
	stepNameRule = "Azure ML step names are lower-case letters, digits and _, starting with a letter or _"
	ioNameRule   = "Azure ML input and output names are letters, digits and _, starting with a letter or _"
)

// checkStepName reports a key of jobs: that is no valid step name.
func (p *parser) checkStepName(name string, e entry) {
	if stepNameRE.MatchString(e.key.Value) {
		return
	}
	fix := suggestName(strings.ToLower(e.key.Value))
	p.errorf(nodePos(name, e.key), withHint("rename the step: "+stepNameRule, fix), "step name %q is not valid", e.key.Value)
}

// checkIONames reports the names of an inputs: or outputs: mapping (what is
// "input" or "output") that are not valid, or equal to an earlier one but
// for case.
func (p *parser) checkIONames(name, what string, list []entry) {
	seen := map[string]entry{}
	for _, e := range list {
		k := e.key.Value
		if !ioNameRE.MatchString(k) {
			p.errorf(nodePos(name, e.key), withHint("rename it: "+ioNameRule, suggestName(k)), "%s name %q is not valid", what, k)
			continue
		}
		first, dup := seen[strings.ToLower(k)]
		switch {
		case !dup:
			seen[strings.ToLower(k)] = e
		case first.key.Value != k:
			// Equal names are duplicate keys, reported by checkDuplicates.
			p.errorf(nodePos(name, e.key), fmt.Sprintf("rename one of them: Azure ML does not tell input and output names apart by case (the first is at line %d)", first.key.Line),
				"%s names %q and %q differ only in case", what, first.key.Value, k)
		}
	}
}

// checkJobStepName reports a sweep job name that cannot name the job's one
// step.
func (p *parser) checkJobStepName(s *scalarAST) bool {
	if jobNameRE.MatchString(s.Value) {
		return true
	}
	p.errorf(s.Pos, "porch names the job's step after it: use letters, digits, - and _, starting with a letter or digit",
		"job name %q cannot name a step", s.Value)
	return false
}

// suggestName proposes a valid name close to an invalid one: other
// characters become _, and a leading digit gets a _ before it. It returns
// "" when nothing of the name is left.
func suggestName(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	out := b.String()
	if strings.Trim(out, "_") == "" {
		return ""
	}
	if out[0] >= '0' && out[0] <= '9' {
		out = "_" + out
	}
	return fmt.Sprintf("did you mean %q?", out)
}
