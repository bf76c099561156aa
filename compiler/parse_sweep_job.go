package compiler

import (
	"go.yaml.in/yaml/v3"

	"github.com/porch-pipelines/porch/compiler/plan"
)

// defaultSweepStep names the one step of a sweep job file without a name.
const defaultSweepStep = "sweep"

// parseSweepJob parses a standalone sweep job file (type: sweep at the top)
// as a pipeline of one sweep step, so that the same workflows run it. The
// job's inputs and outputs become the pipeline's, bound to the step's; the
// trial's inputs are the job's inputs and the search space's parameters.
func (p *parser) parseSweepJob(name string, root *yaml.Node) *pipelineAST {
	pl := &pipelineAST{File: name, Dir: p.absDir(name), Pos: nodePos(name, root)}
	f := p.fields(name, root, "sweep job", sweepJobKeys, sweepJobSilent)
	p.parseJobHeader(name, f, pl, "job")
	s := &stepAST{Name: defaultSweepStep, Pos: pl.Pos, Type: plan.StepSweep}
	if pl.Name != nil && pl.Name.Value != "" && p.checkJobStepName(pl.Name) {
		s.Name = pl.Name.Value
	}
	s.Sweep = p.parseSweepSettings(name, pl.Pos, f)
	s.Tier = p.parseQueueSettings(name, f)
	if e, ok := f["resources"]; ok && p.mapping(name, e) {
		s.Over.Resources = p.parseCommand(name, map[string]entry{"resources": e}, false).Resources
	}
	trial, ok := f["trial"]
	if !ok {
		p.errorf(pl.Pos, "add trial: with the command each trial runs, its code: and environment:", "sweep job has no trial")
		return pl
	}
	if s.Component = p.parseTrialJob(name, trial, pl, s.Sweep); s.Component == nil {
		return pl
	}
	for _, in := range pl.Inputs {
		ref := &refAST{Kind: refParentInput, Name: in.Name, Text: "${{parent.inputs." + in.Name + "}}", Pos: in.Pos}
		s.Inputs = append(s.Inputs, &inputAST{Name: in.Name, Pos: in.Pos, Value: &valueAST{Pos: in.Pos, Ref: ref}})
	}
	for _, o := range pl.Outputs {
		ref := &refAST{Kind: refParentOutput, Name: o.Name, Text: "${{parent.outputs." + o.Name + "}}", Pos: o.Pos}
		s.Outputs = append(s.Outputs, &outputAST{Name: o.Name, Pos: o.Pos, Ref: ref})
	}
	pl.Steps = []*stepAST{s}
	return pl
}

// parseTrialJob reads the inline trial of a sweep job: a command whose
// ${{search_space.x}} and {search_space.x} name parameters, declared as
// inputs of the trial next to the job's own.
func (p *parser) parseTrialJob(name string, e entry, pl *pipelineAST, sw *sweepAST) *componentAST {
	if isNull(e.val) || e.val.Kind != yaml.MappingNode {
		p.errorf(nodePos(name, e.val), "write the trial inline: trial: {command: ..., code: ..., environment: ...}",
			"trial of a sweep job must be a mapping, found %s", kindName(e.val))
		return nil
	}
	tf := p.fields(name, e.val, "trial", trialJobKeys, []string{"type", "$schema"})
	p.sweepRefs = true
	cmd := p.parseCommand(name, tf, true)
	cmd.SearchRefs = p.searchRefs
	p.sweepRefs, p.searchRefs = false, nil
	if _, ok := tf["command"]; !ok {
		p.errorf(nodePos(name, e.key), "add command: with the command line each trial runs", "trial has no command")
		return nil
	}
	comp := &componentAST{File: name, Dir: pl.Dir, Pos: nodePos(name, e.key), Type: plan.StepCommand, SweepJob: true, Command: cmd}
	for _, in := range pl.Inputs {
		comp.Inputs = append(comp.Inputs, &inputAST{Name: in.Name, Pos: in.Pos, Type: pipelineInputType(in),
			TypePos: in.TypePos, Optional: in.Optional})
	}
	for _, n := range sw.Space.Names {
		info := sw.Space.Info[n]
		if in := findInput(pl.Inputs, n); in != nil {
			p.errorf(info.Pos, "rename one of them: a trial input is either fixed under inputs: or searched under search_space:",
				"parameter %q is also an input of the sweep job (line %d)", n, in.Pos.Line)
			continue
		}
		comp.Inputs = append(comp.Inputs, &inputAST{Name: n, Pos: info.Pos, Type: info.Type})
	}
	for _, o := range pl.Outputs {
		comp.Outputs = append(comp.Outputs, &outputAST{Name: o.Name, Pos: o.Pos, Type: o.Type, Mode: o.Mode})
	}
	return comp
}
