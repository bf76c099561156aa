package reuse

import (
	"fmt"
	"strings"
)

// Comparison is one part of a step's key beside the same part of the
// latest record of the step.
type Comparison struct {
	Name string `json:"name"`
	// Hash and Detail are this run's; empty when the part is gone.
	Hash   string `json:"hash,omitempty"`
	Detail string `json:"detail,omitempty"`
	// Was and WasDetail are the latest record's; empty when it had no
	// such part, or there is no record.
	Was       string `json:"was,omitempty"`
	WasDetail string `json:"was_detail,omitempty"`
	// Step is the upstream step an input's value comes from.
	Step string `json:"step,omitempty"`
}

// Changed says whether the part differs from the record's.
func (c Comparison) Changed() bool { return c.Hash != c.Was }

// Compare sets now's parts beside was's: now's in their order, then the
// parts only was has.
func Compare(now, was []Part) []Comparison {
	old := map[string]Part{}
	for _, p := range was {
		old[p.Name] = p
	}
	var out []Comparison
	seen := map[string]bool{}
	for _, p := range now {
		o := old[p.Name]
		out = append(out, Comparison{Name: p.Name, Hash: p.Hash, Detail: p.Detail, Was: o.Hash, WasDetail: o.Detail, Step: p.Step})
		seen[p.Name] = true
	}
	for _, p := range was {
		if !seen[p.Name] {
			out = append(out, Comparison{Name: p.Name, Was: p.Hash, WasDetail: p.Detail})
		}
	}
	return out
}

// Changes names what changed between the latest record and now, one
// phrase per changed part: `input "data" changed (content 3f2a… → 9c1b…)`,
// `dependency "prep" ran`, `command changed`. ran says which upstream
// steps ran in this run (rather than being reused); code names the files
// of the code snapshot that changed, when known.
func Changes(cs []Comparison, ran map[string]bool, code string) []string {
	var out []string
	deps := map[string]bool{}
	for _, c := range cs {
		if !c.Changed() {
			continue
		}
		switch {
		case c.Step != "" && ran[c.Step]:
			if !deps[c.Step] {
				out = append(out, fmt.Sprintf("dependency %q ran", c.Step))
				deps[c.Step] = true
			}
		case c.Hash == "":
			out = append(out, c.Name+" removed")
		case c.Was == "":
			out = append(out, c.Name+" added")
		case c.Name == PartCode && code != "":
			out = append(out, "code changed: "+code)
		case strings.HasPrefix(c.Name, "input ") && c.Detail != "" && c.WasDetail != "":
			out = append(out, fmt.Sprintf("%s changed (%s → %s)", c.Name, c.WasDetail, c.Detail))
		case strings.HasPrefix(c.Name, "input "):
			out = append(out, fmt.Sprintf("%s changed (content %s → %s)", c.Name, Short(c.Was), Short(c.Hash)))
		default:
			out = append(out, c.Name+" changed")
		}
	}
	return out
}
