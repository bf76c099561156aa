package compiler

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"

	"github.com/porch-pipelines/porch/internal/userfile"
)

// splittableTypes are the input types input_data may name.
var splittableTypes = []string{"uri_folder", "uri_file", "mltable"}

// mergeParallel applies a step's settings over its component's: each
// setting the step gives wins, the task's field by field.
func mergeParallel(comp, over *parallelAST) *parallelAST {
	m := *comp
	if over == nil {
		return &m
	}
	if over.InputData != nil {
		m.InputData, m.InputName = over.InputData, over.InputName
	}
	if over.MiniBatchSize != nil {
		m.MiniBatchSize = over.MiniBatchSize
	}
	if over.PartitionPos.Line != 0 {
		m.PartitionKeys, m.PartitionPos = over.PartitionKeys, over.PartitionPos
	}
	for _, f := range []struct{ dst, src *optInt }{
		{&m.MaxConcurrency, &over.MaxConcurrency}, {&m.MaxRetries, &over.MaxRetries}, {&m.Timeout, &over.Timeout},
		{&m.MiniBatchErrorThreshold, &over.MiniBatchErrorThreshold}, {&m.ErrorThreshold, &over.ErrorThreshold},
	} {
		if f.src.Set {
			*f.dst = *f.src
		}
	}
	if over.Resources != nil {
		m.Resources = over.Resources
	}
	m.LoggingLevel = orDefault(over.LoggingLevel, m.LoggingLevel)
	if len(comp.EnvVars)+len(over.EnvVars) > 0 {
		m.EnvVars = map[string]string{}
		for k, v := range comp.EnvVars {
			m.EnvVars[k] = v
		}
		for k, v := range over.EnvVars {
			m.EnvVars[k] = v
		}
	}
	m.Task = mergeTask(comp.Task, over.Task)
	return &m
}

func mergeTask(comp, over *taskAST) *taskAST {
	switch {
	case over == nil:
		return comp
	case comp == nil:
		return over
	}
	t := *comp
	if over.Code != "" {
		t.Code, t.CodeShown = over.Code, over.CodeShown
	}
	if over.Environment != "" {
		t.Environment, t.Env = over.Environment, over.Env
	}
	if over.EntryScript != nil {
		t.EntryScript = over.EntryScript
	}
	if over.Args != nil {
		t.Args, t.Template, t.RefPos, t.Flags = over.Args, over.Template, over.RefPos, over.Flags
	}
	if over.AppendRowTo != nil {
		t.AppendRowTo, t.AppendName = over.AppendRowTo, over.AppendName
	}
	return &t
}

// checkParallel checks a parallel step's merged settings against its
// inputs and outputs, and that its entry script exists.
func (c *checker) checkParallel(pl *pipelineAST, steps map[string]*stepAST, s *stepAST) {
	par := mergeParallel(s.Component.Parallel, s.Par)
	s.par = par
	ins, outs := s.Component.Inputs, s.Component.Outputs
	what := "component"
	if s.Component.Inline {
		ins, outs, what = s.Inputs, s.Outputs, "step"
	}
	c.checkInputData(pl, steps, s, par, ins, what)
	if par.Task == nil {
		c.errorf(s.Pos, "add task: with type: run_function, code: and entry_script:", "parallel step %q has no task", s.Name)
		return
	}
	t := par.Task
	if t.AppendName != "" && findOutput(outs, t.AppendName) == nil {
		c.errorf(t.AppendRowTo.Pos, withHint(fmt.Sprintf("declare it under the %s's outputs:", what), suggest(t.AppendName, outputNames(outs))),
			"append_row_to names unknown output %q", t.AppendName)
	}
	c.checkTemplateOf(commandAST{Command: t.Args, Template: t.Template, RefPos: t.RefPos}, ins, outs, what, "program_arguments")
	c.checkEntryScript(s, t)
}

// checkInputData checks that input_data names a data input of the step,
// and that partition_keys go with tabular data.
func (c *checker) checkInputData(pl *pipelineAST, steps map[string]*stepAST, s *stepAST, par *parallelAST, ins []*inputAST, what string) {
	if par.InputData == nil {
		c.errorf(s.Pos, "add input_data: ${{inputs.<name>}} naming the input to split into mini-batches",
			"parallel step %q has no input_data", s.Name)
		return
	}
	name := par.InputName
	if name == "" {
		return // reported by the parser
	}
	if findInput(ins, name) == nil {
		c.errorf(par.InputData.Pos, withHint(fmt.Sprintf("declare it under the %s's inputs:", what), suggest(name, inputNames(ins))),
			"input_data names unknown input %q", name)
		return
	}
	typ := stepInputType(pl, steps, s, name, 0)
	if !contains(splittableTypes, typ) {
		found := orDefault(typ, "of no declared type")
		c.errorf(par.InputData.Pos, fmt.Sprintf("give input %q type: uri_folder (a folder of files) or mltable (tabular data)", name),
			"input_data must name a uri_folder, uri_file or mltable input, but %q is %s", name, found)
		return
	}
	if par.PartitionPos.Line != 0 && typ != "mltable" {
		c.errorf(par.PartitionPos, fmt.Sprintf("partition_keys split tabular data: give input %q type: mltable, or remove partition_keys", name),
			"partition_keys need an mltable input, but input_data %q is %s", name, typ)
	}
}

// checkEntryScript checks that the entry script is a file inside code.
func (c *checker) checkEntryScript(s *stepAST, t *taskAST) {
	if t.EntryScript == nil {
		c.errorf(t.Pos, "add entry_script: naming the Python file, relative to code:, that defines init() and run(mini_batch)",
			"task of step %q has no entry_script", s.Name)
		return
	}
	code, shown := t.Code, t.CodeShown
	if code == "" {
		code, shown = s.Component.Dir, filepath.Dir(s.Component.File)
	}
	es := t.EntryScript
	if !filepath.IsLocal(es.Value) {
		c.errorf(es.Pos, "write the script's path relative to code:, inside that folder",
			"entry_script %q is not inside the code folder %q", es.Value, shown)
		return
	}
	if c.readFile == nil {
		return
	}
	path := filepath.Join(code, es.Value)
	err, seen := c.scripts[path]
	if !seen {
		_, err = c.readFile(path)
		c.scripts[path] = err
	}
	var notRegular *userfile.NotRegularError
	var tooLarge *userfile.TooLargeError
	switch {
	case err == nil, errors.As(err, &tooLarge):
		// It exists; its size is Python's business.
	case errors.As(err, &notRegular):
		c.errorf(es.Pos, "point entry_script: at a Python file inside the code folder",
			"entry script %q is %s, not a regular file", filepath.Join(shown, es.Value), notRegular.Kind)
	case errors.Is(err, fs.ErrNotExist):
		c.errorf(es.Pos, fmt.Sprintf("check entry_script: and code:; the script's path is relative to the code folder %q", shown),
			"entry script %q does not exist", filepath.Join(shown, es.Value))
	default:
		c.errorf(es.Pos, "point entry_script: at a Python file inside the code folder", "cannot read entry script %q: %v", filepath.Join(shown, es.Value), err)
	}
}
