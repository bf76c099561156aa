package compiler

import (
	"fmt"
	"strings"

	"github.com/porch-pipelines/porch/compiler/plan"
)

// Outputs land in datastores only: an output path is
// azureml://datastores/<name>/paths/<path>, the path staying inside the
// datastore. Anything else (an absolute or relative path, a file:// URI)
// would let a pipeline write anywhere on a worker's host, so it is refused
// here; the workers check again before they write.

const (
	datastoreForm = "azureml://datastores/<name>/paths/<path>"
	outputPathDo  = "porch writes outputs only into datastores: write " + datastoreForm +
		", or leave path: out to write to azureml/<run>/<step>/<output>/ in the default datastore"
)

// checkOutputPath reports an output path that does not resolve inside a
// datastore.
func (p *parser) checkOutputPath(output string, s *scalarAST) {
	name, rest, ok := plan.SplitDatastoreURI(pathForCheck(strings.TrimSpace(s.Value)))
	switch {
	case !ok && strings.HasPrefix(strings.TrimSpace(s.Value), plan.DatastorePrefix):
		p.errorf(s.Pos, "write "+datastoreForm, "output %q has a malformed datastore path %q", output, s.Value)
	case !ok:
		p.errorf(s.Pos, withHint(outputPathDo, suggestDatastorePath(s.Value)), "output %q has path %q, which is in no datastore", output, s.Value)
	default:
		p.checkDatastorePath("output "+quote(output), s, name, rest)
	}
}

// checkDatastorePath reports a datastore URI (of what, at s) whose
// datastore name is not one, or whose path climbs out of the datastore.
func (d *diags) checkDatastorePath(what string, s *scalarAST, name, rest string) {
	switch {
	case !plan.ValidDatastoreName(name):
		d.errorf(s.Pos, "name a datastore: letters, digits, _, - and .", "%s path %q names datastore %q, which is no datastore name", what, s.Value, name)
	case plan.LeavesDatastore(rest):
		d.errorf(s.Pos, "write a path inside the datastore, without \"..\" segments (plain or percent-encoded)",
			"%s path %q leaves its datastore with \"..\"", what, s.Value)
	}
}

// checkDefaultDatastore reports a settings.default_datastore that names no
// datastore: it becomes part of every default output path.
func (p *parser) checkDefaultDatastore(s *scalarAST) {
	if s == nil {
		return
	}
	name := strings.TrimPrefix(strings.TrimSpace(s.Value), "azureml:")
	if !plan.ValidDatastoreName(name) {
		p.errorf(s.Pos, fmt.Sprintf("write the name of a datastore (letters, digits, _, - and .), such as azureml:%s", plan.DefaultDatastore),
			"default_datastore %q is no datastore name", s.Value)
	}
}

// suggestDatastorePath proposes the datastore form of a local output path
// (/prepped_data, file:///x, ./out), "" for a path it cannot keep.
func suggestDatastorePath(v string) string {
	rest := strings.TrimPrefix(strings.TrimSpace(v), "file://")
	if strings.Contains(rest, ":") || plan.LeavesDatastore(rest) {
		return ""
	}
	rest = strings.TrimLeft(strings.TrimPrefix(rest, "./"), "/")
	if rest == "" {
		return ""
	}
	return fmt.Sprintf("did you mean %q?", plan.DatastoreURI("${{default_datastore}}", rest))
}

// pathForCheck replaces the ${{...}} of an output path by values of the
// kind they stand for: the run's id, the output's name and the default
// datastore are names (checked themselves), never "..". normalizePath
// reports references that are none of these.
func pathForCheck(v string) string {
	var b strings.Builder
	for {
		i := strings.Index(v, "${{")
		if i < 0 {
			b.WriteString(v)
			return b.String()
		}
		j := strings.Index(v[i:], "}}")
		if j < 0 {
			b.WriteString(v)
			return b.String()
		}
		b.WriteString(v[:i])
		if strings.TrimSpace(v[i+3:i+j]) == "default_datastore" {
			b.WriteString(plan.DefaultDatastore)
		} else {
			b.WriteString("x")
		}
		v = v[i+j+2:]
	}
}
