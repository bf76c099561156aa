package compiler

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/porch-pipelines/porch/compiler/plan"
)

// Keys of a parallel step and a parallel component (Azure ML's
// ParameterizedParallelSchema with the node and component keys).
var (
	parallelKeys = []string{"input_data", "mini_batch_size", "partition_keys", "max_concurrency_per_instance",
		"task", "retry_settings", "mini_batch_error_threshold", "error_threshold", "logging_level",
		"environment_variables", "resources"}
	parallelStepKeys = append([]string{"type", "component", "inputs", "outputs", "compute", "display_name",
		"description", "tags", "name", "identity", "queue_settings"}, parallelKeys...)
	parallelComponentKeys = append([]string{"$schema", "type", "name", "version", "display_name", "description",
		"tags", "inputs", "outputs", "is_deterministic"}, parallelKeys...)
	taskKeys      = []string{"type", "code", "entry_script", "environment", "program_arguments", "append_row_to"}
	retryKeys     = []string{"max_retries", "timeout"}
	loggingLevels = []string{"DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"}
)

// miniBatchSizeRE is the form Azure ML accepts for mini_batch_size: a file
// count, or a size with a unit for tabular input.
var miniBatchSizeRE = regexp.MustCompile(`^\d+([kKmMgG][bB])?$`)

// maxTimeout is the largest timeout Azure ML accepts, in seconds (3 days).
const maxTimeout = 259200

// optInt is an integer setting that may be absent.
type optInt struct {
	V   int
	Set bool
	Pos plan.Pos
}

// or returns o's value when set, def otherwise.
func (o optInt) or(def int) int {
	if o.Set {
		return o.V
	}
	return def
}

// parallelAST is what a parallel component or step says; zero fields mean
// "not given", so a step's settings can be merged over its component's.
type parallelAST struct {
	// InputData is input_data: as written; InputName the input it names.
	InputData *scalarAST
	InputName string
	// MiniBatchSize is mini_batch_size as written, already checked.
	MiniBatchSize *scalarAST
	PartitionKeys []string
	// PartitionPos is where partition_keys: is; Line 0 when absent.
	PartitionPos   plan.Pos
	MaxConcurrency optInt
	Resources      *plan.Resources
	MaxRetries     optInt
	Timeout        optInt
	// MiniBatchErrorThreshold and ErrorThreshold are the YAML keys.
	MiniBatchErrorThreshold optInt
	ErrorThreshold          optInt
	// LoggingLevel is upper case, "" when not given.
	LoggingLevel string
	EnvVars      map[string]string
	Task         *taskAST
}

// taskAST is a parallel task: section.
type taskAST struct {
	Pos plan.Pos
	// Code is absolute, "" when not given; CodeShown is the same folder
	// as messages name it (joined to the YAML file's name, not absolute).
	Code        string
	CodeShown   string
	EntryScript *scalarAST
	Environment string
	Env         *plan.Environment
	// Args is program_arguments as written, nil when not given; Template
	// is Args without the flags porch reads, which are in Flags.
	Args     *scalarAST
	Template plan.Template
	RefPos   []plan.Pos
	Flags    argFlags
	// AppendRowTo is append_row_to as written; AppendName the output it names.
	AppendRowTo *scalarAST
	AppendName  string
}

// parseParallel reads the parallel settings of a step or component mapping.
func (p *parser) parseParallel(name string, f map[string]entry) *parallelAST {
	par := &parallelAST{}
	if s := p.scalar(name, f["input_data"]); s != nil {
		par.InputData = s
		par.InputName = p.ioRef(s, "inputs", "input_data", "the input to split into mini-batches")
	}
	if s := p.scalar(name, f["mini_batch_size"]); s != nil {
		if miniBatchSizeRE.MatchString(s.Value) {
			par.MiniBatchSize = s
		} else {
			p.errorf(s.Pos, `write a file count such as "10", or for mltable input a size such as "10kb", "1mb" or "1gb"`,
				"mini_batch_size %q is neither a count nor a size", s.Value)
		}
	}
	if e, ok := f["partition_keys"]; ok && !isNull(e.val) {
		par.PartitionPos = nodePos(name, e.key)
		par.PartitionKeys = p.stringList(name, e)
	}
	par.MaxConcurrency = p.intRange(name, f["max_concurrency_per_instance"], "max_concurrency_per_instance", 1, -1)
	if e, ok := f["resources"]; ok && p.mapping(name, e) {
		rf := p.fields(name, e.val, "resources", resourceKeys, nil)
		count := p.intRange(name, rf["instance_count"], "resources.instance_count", 1, -1)
		par.Resources = &plan.Resources{InstanceCount: count.V, InstanceType: p.instanceType(name, rf["instance_type"]),
			ShmSize: p.str(name, rf["shm_size"])}
	}
	if e, ok := f["retry_settings"]; ok && p.mapping(name, e) {
		rf := p.fields(name, e.val, "retry_settings", retryKeys, nil)
		par.MaxRetries = p.intRange(name, rf["max_retries"], "retry_settings.max_retries", 0, -1)
		par.Timeout = p.intRange(name, rf["timeout"], "retry_settings.timeout", 1, maxTimeout)
	}
	par.MiniBatchErrorThreshold = p.intRange(name, f["mini_batch_error_threshold"], "mini_batch_error_threshold", -1, -1)
	par.ErrorThreshold = p.intRange(name, f["error_threshold"], "error_threshold", -1, -1)
	if s := p.scalar(name, f["logging_level"]); s != nil {
		par.LoggingLevel = p.loggingLevel(s.Pos, "logging_level", s.Value)
	}
	par.EnvVars = p.stringMap(name, f["environment_variables"], "environment_variables")
	if e, ok := f["task"]; ok {
		par.Task = p.parseTask(name, e)
	}
	return par
}

// parseTask reads a parallel task: section.
func (p *parser) parseTask(name string, e entry) *taskAST {
	t := &taskAST{Pos: nodePos(name, e.key)}
	if isNull(e.val) || e.val.Kind != yaml.MappingNode {
		p.errorf(nodePos(name, e.val), "write task: with type: run_function, code: and entry_script:", "task must be a mapping, found %s", kindName(e.val))
		return t
	}
	f := p.fields(name, e.val, "task", taskKeys, []string{"model"})
	if typ := p.scalar(name, f["type"]); typ != nil && typ.Value != "run_function" {
		p.errorf(typ.Pos, withHint("porch runs Python entry scripts (init() and run(mini_batch)): write type: run_function",
			suggest(typ.Value, []string{"run_function"})), "task type %q is not supported by porch", typ.Value)
	}
	if code := p.scalar(name, f["code"]); code != nil {
		t.Code = p.codePath(name, code)
		t.CodeShown = filepath.Join(filepath.Dir(name), strings.TrimPrefix(code.Value, "file:"))
		if filepath.IsAbs(strings.TrimPrefix(code.Value, "file:")) {
			t.CodeShown = t.Code
		}
	}
	t.EntryScript = p.scalar(name, f["entry_script"])
	if x, ok := f["environment"]; ok {
		t.Environment = describeEnvironment(x.val)
		t.Env = p.parseEnvironment(name, x)
	}
	if s := p.scalar(name, f["program_arguments"]); s != nil {
		t.Args = s
		t.Template, t.RefPos, t.Flags = p.parseProgramArguments(s)
	}
	if s := p.scalar(name, f["append_row_to"]); s != nil {
		t.AppendRowTo = s
		t.AppendName = p.ioRef(s, "outputs", "append_row_to", "the output every run() result is appended to")
	}
	return t
}

// ioRef reads a value that must be exactly ${{inputs.x}} (or outputs) and
// returns x, "" after reporting any other form.
func (p *parser) ioRef(s *scalarAST, kind, key, what string) string {
	v := strings.TrimSpace(s.Value)
	if body, ok := strings.CutPrefix(v, "${{"); ok {
		if body, ok = strings.CutSuffix(body, "}}"); ok && !strings.Contains(body, "${{") {
			segs := strings.Split(strings.TrimSpace(body), ".")
			if len(segs) == 2 && strings.TrimSpace(segs[0]) == kind && strings.TrimSpace(segs[1]) != "" {
				return strings.TrimSpace(segs[1])
			}
		}
	}
	p.errorf(s.Pos, fmt.Sprintf("write %s: ${{%s.<name>}} naming %s", key, kind, what),
		"%s must be ${{%s.<name>}}, found %q", key, kind, s.Value)
	return ""
}

// intRange reads an optional integer that must be at least lo and, when hi
// is not -1, at most hi.
func (p *parser) intRange(name string, e entry, what string, lo, hi int) optInt {
	s := p.scalar(name, e)
	if s == nil {
		return optInt{}
	}
	n, ok := p.checkRange(s.Pos, what, s.Value, lo, hi)
	return optInt{V: n, Set: ok, Pos: s.Pos}
}

// checkRange parses v as an integer in [lo, hi] (hi -1: no upper bound),
// reporting a problem at pos.
func (p *parser) checkRange(pos plan.Pos, what, v string, lo, hi int) (int, bool) {
	want := fmt.Sprintf("write a whole number of at least %d", lo)
	if hi != -1 {
		want = fmt.Sprintf("write a whole number from %d to %d", lo, hi)
	}
	if p.bindingNotLiteral(pos, what, v) {
		return 0, false
	}
	n, ok := parseInt(v)
	switch {
	case !ok:
		p.errorf(pos, want, "%q must be an integer, found %q", what, v)
		return 0, false
	case n < int64(lo):
		p.errorf(pos, want, "%q must be at least %d, found %s", what, lo, strings.TrimSpace(v))
		return 0, false
	case hi != -1 && n > int64(hi):
		p.errorf(pos, want, "%q must be at most %d, found %s", what, hi, strings.TrimSpace(v))
		return 0, false
	}
	return int(n), true
}

// loggingLevel checks a logging level, case-insensitive, and returns it in
// upper case ("" when wrong).
func (p *parser) loggingLevel(pos plan.Pos, what, v string) string {
	up := strings.ToUpper(strings.TrimSpace(v))
	if contains(loggingLevels, up) {
		return up
	}
	p.errorf(pos, withHint("write DEBUG, INFO, WARNING, ERROR or CRITICAL", suggest(up, loggingLevels)),
		"%q must be a logging level, found %q", what, v)
	return ""
}

// stringList reads a list of scalars such as partition_keys.
func (p *parser) stringList(name string, e entry) []string {
	if e.val.Kind != yaml.SequenceNode {
		p.errorf(nodePos(name, e.val), "write a list: [a, b]", "%q must be a list, found %s", e.key.Value, kindName(e.val))
		return nil
	}
	var out []string
	for _, x := range e.val.Content {
		x = deref(x)
		if x.Kind != yaml.ScalarNode || isNull(x) {
			p.errorf(nodePos(name, x), "write column names", "%q entries must be names, found %s", e.key.Value, kindName(x))
			continue
		}
		out = append(out, x.Value)
	}
	return out
}

// parseParallelComponent reads a parallel component file or inline
// parallel component.
func (p *parser) parseParallelComponent(c *componentAST, name string, n *yaml.Node) *componentAST {
	f := p.fields(name, n, "parallel component", parallelComponentKeys, componentSilent)
	c.DisplayName = p.str(name, f["display_name"])
	c.NotDeterministic = p.notDeterministic(name, f)
	if e, ok := f["inputs"]; ok {
		c.Inputs = p.parseInputs(name, e.val, ctxDecl)
	}
	if e, ok := f["outputs"]; ok {
		c.Outputs = p.parseOutputs(name, e.val)
	}
	c.Parallel = p.parseParallel(name, f)
	return c
}

// mapping reports whether an entry is a mapping, after reporting a value
// that is neither a mapping nor null.
func (p *parser) mapping(name string, e entry) bool {
	switch {
	case isNull(e.val):
		return false
	case e.val.Kind != yaml.MappingNode:
		p.errorf(nodePos(name, e.val), "write "+e.key.Value+" as key: value pairs", "%s must be a mapping, found %s", e.key.Value, kindName(e.val))
		return false
	}
	return true
}
