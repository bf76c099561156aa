// Package history exports the Temporal histories of a run's workflows and
// reads them back, in two forms:
//
//   - a document: one JSON object for the whole run, {"run": RUN,
//     "workflows": [{"workflow_id", "run_id", "workflow_type", "history"}]},
//     each history as `temporal workflow show --output json` writes it;
//   - a folder: one such history file per workflow execution, named after
//     the workflow id (see FileName).
//
// Nothing here knows porch's workflows: which workflows belong to a run is
// the caller's visibility query, and the children and continue-as-new runs
// their histories name.
package history

import (
	"fmt"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"

	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/api/temporalproto"
)

// Execution is one run of one workflow and its history.
type Execution struct {
	// WorkflowID is "" when the source does not say (a history file holds
	// no workflow id).
	WorkflowID string
	// RunID is "" when the source does not say.
	RunID        string
	WorkflowType string
	History      *historypb.History
}

// workflowType is the type the history's first event names, "" when it
// names none.
func workflowType(h *historypb.History) string {
	return h.GetEvents()[0].GetWorkflowExecutionStartedEventAttributes().GetWorkflowType().GetName()
}

// marshal writes h as `temporal workflow show --output json` does.
func marshal(h *historypb.History) ([]byte, error) {
	return temporalproto.CustomJSONMarshalOptions{Indent: "  "}.Marshal(h)
}

// unmarshal reads a history as the SDK's replayer does, ignoring fields
// newer than this build's protos.
func unmarshal(data []byte) (*historypb.History, error) {
	var h historypb.History
	if err := (temporalproto.CustomJSONUnmarshalOptions{DiscardUnknown: true}).Unmarshal(data, &h); err != nil {
		return nil, err
	}
	return &h, nil
}

// FileName is the file, relative to an export folder, of the n-th run (from
// 1, in start order) of workflowID: the id's "/"-separated parts as
// folders, then "@n" from the second run on, then ".json":
// "hello-k2x8/b.json", "hello-k2x8/score@2.json". A byte other than a
// letter, digit, '-', '_' or '.' (and a part's leading '.') is written as
// %XX, so every name is a plain file name and ParseFileName inverts it. An
// id with an empty part ("a//b", "a/") is written as one file, its '/'s
// escaped too.
func FileName(workflowID string, n int) string {
	parts := strings.Split(workflowID, "/")
	if slices.Contains(parts, "") {
		parts = []string{escapePart(workflowID, true)}
	} else {
		for i, p := range parts {
			parts[i] = escapePart(p, false)
		}
	}
	name := path.Join(parts...)
	if n > 1 {
		name += "@" + strconv.Itoa(n)
	}
	return name + ".json"
}

// escapePart escapes one part of a workflow id for FileName; slash says
// whether '/' is escaped too (it cannot occur otherwise).
func escapePart(p string, slash bool) string {
	var b strings.Builder
	for i := 0; i < len(p); i++ {
		c := p[i]
		plain := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' ||
			c == '.' && i > 0 || c == '/' && !slash
		if plain {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
}

// runSuffix is FileName's "@n" before ".json".
var runSuffix = regexp.MustCompile(`@([0-9]+)$`)

// ParseFileName inverts FileName: rel is a file's path relative to its
// export folder, with '/' separators. ok is false for a name FileName does
// not write (a file named by hand).
func ParseFileName(rel string) (workflowID string, n int, ok bool) {
	name, found := strings.CutSuffix(rel, ".json")
	if !found || name == "" {
		return "", 0, false
	}
	n = 1
	if m := runSuffix.FindStringSubmatchIndex(name); m != nil {
		n, _ = strconv.Atoi(name[m[2]:m[3]])
		if n < 2 {
			return "", 0, false
		}
		name = name[:m[0]]
	}
	parts := strings.Split(name, "/")
	for i, p := range parts {
		u, err := unescapePart(p)
		if err != nil || u == "" {
			return "", 0, false
		}
		parts[i] = u
	}
	return strings.Join(parts, "/"), n, true
}

// unescapePart decodes the %XX escapes of escapePart, refusing any other
// byte escapePart would have escaped.
func unescapePart(p string) (string, error) {
	var b strings.Builder
	for i := 0; i < len(p); i++ {
		c := p[i]
		switch {
		case c == '%':
			if i+3 > len(p) {
				return "", fmt.Errorf("short escape in %q", p)
			}
			v, err := strconv.ParseUint(p[i+1:i+3], 16, 8)
			if err != nil {
				return "", fmt.Errorf("bad escape in %q", p)
			}
			b.WriteByte(byte(v))
			i += 2
		case c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.' && i > 0:
			b.WriteByte(c)
		default:
			return "", fmt.Errorf("unexpected %q in %q", c, p)
		}
	}
	return b.String(), nil
}
