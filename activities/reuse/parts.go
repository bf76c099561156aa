package reuse

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/porch-pipelines/porch/compiler/plan"
)

// Names of the parts of a key that are not inputs.
const (
	PartCommand      = "command"
	PartTask         = "parallel task"
	PartEnvironment  = "environment"
	PartDistribution = "distribution"
	PartInstances    = "instance_count"
	PartInterface    = "interface"
	PartCode         = "code"
	PartSweep        = "sweep"
	PartTrial        = "trial pipeline"
)

// InputPart names an input's part: `input "data"`.
func InputPart(name string) string { return fmt.Sprintf("input %q", name) }

// specParts are the parts of a step's key that its plan alone decides:
// everything but its code's and inputs' content. Compute, display name and
// the queue a step runs on are left out: they do not change its result.
func specParts(s plan.Step, inputs []plan.Input) []Part {
	var parts []Part
	add := func(name, value string) { parts = append(parts, Part{Name: name, Hash: hashOf(value)}) }
	if c := s.Command; c != nil {
		add(PartCommand, c.Template.Source)
		add(PartEnvironment, environment(c.Environment, c.EnvironmentVariables))
		if c.Distribution != nil {
			add(PartDistribution, jsonOf(c.Distribution))
		}
		add(PartInstances, strconv.Itoa(c.Resources.Instances()))
	}
	if p := s.Parallel; p != nil {
		task := *p
		// The code is a part of its own; the resources but the instance
		// count say where the step runs, not what it computes.
		task.Task.Code = ""
		task.Resources = plan.Resources{}
		add(PartTask, jsonOf(task))
		add(PartInstances, strconv.Itoa(p.Resources.Instances()))
	}
	if s.Sweep != nil {
		add(PartSweep, jsonOf(s.Sweep))
		if s.Pipeline != nil {
			add(PartTrial, jsonOf(s.Pipeline))
		}
	}
	add(PartInterface, iface(inputs, s.Outputs))
	return parts
}

// environment is an environment as written, with its variables sorted.
func environment(env string, vars map[string]string) string {
	lines := []string{env}
	keys := make([]string, 0, len(vars))
	for k := range vars {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		lines = append(lines, k+"="+vars[k])
	}
	return strings.Join(lines, "\n")
}

// iface is a step's inputs' and outputs' declarations (an output's path as
// written: where it lands is part of its result).
func iface(inputs []plan.Input, outputs []plan.Output) string {
	var b strings.Builder
	for _, i := range inputs {
		fmt.Fprintf(&b, "input %q %q %t %q\n", i.Name, i.Type, i.Optional, i.Mode)
	}
	for _, o := range outputs {
		fmt.Fprintf(&b, "output %q %q %q %q\n", o.Name, o.Type, o.Mode, o.Path)
	}
	return b.String()
}

// jsonOf is v's JSON, whose field order is its type's and whose map keys
// are sorted: a stable text to hash.
func jsonOf(v any) string {
	data, err := json.Marshal(v)
	if err != nil {
		// Plan types always marshal; a failure would be a programming
		// error, and a key that never matches is the safe answer.
		return "unmarshalable: " + err.Error()
	}
	return string(data)
}

// code is the code folder or file a step runs, "" for none.
func code(s plan.Step) string {
	switch {
	case s.Command != nil:
		return s.Command.Code
	case s.Parallel != nil:
		return s.Parallel.Task.Code
	}
	return ""
}
