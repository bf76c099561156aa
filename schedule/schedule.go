// Package schedule reads Azure ML schedule YAML (az ml schedule create -f:
// a cron or recurrence trigger, a time zone, the job to create) and turns
// its trigger into a Temporal schedule spec. Problems are reported at the
// file's line and column; Windows time zone names (as Azure ML's schema
// lists them) map to IANA zones by CLDR's windowsZones table.
package schedule

import (
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/porch-pipelines/porch/compiler"
)

// Schedule is a parsed schedule file.
type Schedule struct {
	File        string
	Name        string
	DisplayName string
	Description string
	Tags        map[string]string
	Trigger     Trigger
	Job         Job
}

// Options tune Parse.
type Options struct {
	// Set overrides what the file says, as az ml schedule create --set:
	// dotted keys (trigger.time_zone, create_job.inputs.x) to values,
	// which are read as YAML.
	Set map[string]string
	// Now is the time the schedule is read: an end_time before it is an
	// error.
	Now time.Time
}

// topKeys are the keys of Azure ML's schedule schema.
var (
	topKeys     = []string{"$schema", "name", "version", "display_name", "description", "tags", "properties", "trigger", "create_job"}
	namePattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]{0,199}$`)
)

// Parse reads a schedule file. The schedule is usable only when the
// diagnostics hold no error.
func Parse(file string, data []byte, opts Options) (*Schedule, compiler.Diagnostics) {
	root, diags := compiler.DecodeYAML(file, data,
		"write a schedule: name:, trigger: {type: cron, expression: ...} and create_job: ./pipeline.yml",
		"the top level must be keys such as name:, trigger: and create_job:")
	if root == nil || diags.HasErrors() {
		return nil, diags
	}
	r := &reader{file: file, diags: diags}
	r.applySets(root, opts.Set)
	all := r.mapping(root, "", topKeys, false)
	s := &Schedule{File: file}
	s.Name = r.str(all["name"], "name")
	switch {
	case !all["name"].present():
		r.errorf(root, "name", "give the schedule a name: name: nightly_retrain", "the schedule has no name")
	case !namePattern.MatchString(s.Name):
		r.errorf(all["name"].val, "name", "a schedule's name has letters, digits, '-' and '_' only, starts with a letter or a digit "+
			"and has at most 200 of them: it names the schedule and, with the time, each of its runs", "%q is not a schedule name", s.Name)
	}
	s.DisplayName = r.str(all["display_name"], "display_name")
	s.Description = r.str(all["description"], "description")
	s.Tags = r.labels(all["tags"], "tags")
	// A missing trigger or job is reported at the top of the file.
	for _, k := range []string{"trigger", "create_job"} {
		if e := all[k]; e.key == nil {
			all[k] = entry{key: root}
		}
	}
	s.Trigger = r.readTrigger(all["trigger"], opts.Now)
	dir, err := filepath.Abs(filepath.Dir(file))
	if err != nil {
		dir = filepath.Dir(file)
	}
	s.Job = r.readJob(all["create_job"], dir)
	r.diags.Sort()
	if r.diags.HasErrors() {
		return nil, r.diags
	}
	return s, r.diags
}

// applySets writes the --set overrides into the tree, as if the file said
// so, in sorted order; each new node stands for its flag.
func (r *reader) applySets(root *yaml.Node, set map[string]string) {
	keys := make([]string, 0, len(set))
	for k := range set {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, key := range keys {
		var val yaml.Node
		if err := yaml.Unmarshal([]byte(set[key]), &val); err != nil || len(val.Content) == 0 {
			val = yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: set[key]}
		} else {
			val = *val.Content[0]
		}
		mark(&val, setMark+key)
		parts := strings.Split(key, ".")
		m := root
		for i, part := range parts {
			if part == "" || m.Kind != yaml.MappingNode {
				r.report(compiler.Error, r.pos(&yaml.Node{LineComment: setMark + key}), "", "write --set KEY=VALUE with KEY a dotted path "+
					"such as trigger.time_zone or create_job.inputs.x", "%q is not a path in the schedule", key)
				break
			}
			if i == len(parts)-1 {
				setKey(m, part, &val)
				break
			}
			m = child(m, part, setMark+key)
		}
	}
}

// mark makes n and everything under it stand for a --set flag.
func mark(n *yaml.Node, comment string) {
	n.Line, n.Column, n.LineComment = 0, 0, comment
	for _, c := range n.Content {
		mark(c, comment)
	}
}

func setKey(m *yaml.Node, key string, val *yaml.Node) {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			m.Content[i+1] = val
			return
		}
	}
	k := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: key, LineComment: val.LineComment}
	m.Content = append(m.Content, k, val)
}

// child returns the mapping under key, made when absent or not a mapping.
func child(m *yaml.Node, key, comment string) *yaml.Node {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value != key {
			continue
		}
		v := deref(m.Content[i+1])
		if v.Kind == yaml.MappingNode {
			return v
		}
		nm := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", LineComment: comment}
		if key == "create_job" && v.Kind == yaml.ScalarNode {
			// create_job: FILE overridden field by field is the inline
			// form of the same job.
			setKey(nm, "type", &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: "pipeline", LineComment: comment})
			setKey(nm, "job", v)
		}
		m.Content[i+1] = nm
		return nm
	}
	v := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", LineComment: comment}
	setKey(m, key, v)
	return v
}
