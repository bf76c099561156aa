package compiler

import (
	"errors"
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/porch-pipelines/porch/compiler/plan"
)

// yamlLineRE pulls the line out of yaml.v3's "yaml: line N: msg" errors.
var yamlLineRE = regexp.MustCompile(`^yaml: (?:line (\d+): )?(.*)$`)

// decodeYAML parses one YAML document into a node tree and checks what
// yaml.v3 does not: tabs in indentation, duplicate keys, an empty file, a
// top level that is not a mapping, aliases that repeat more than maxAlias
// nodes. It returns nil when the file is unusable.
func decodeYAML(d *diags, name string, data []byte, maxAlias int) *yaml.Node {
	return decodeMapping(d, name, data, maxAlias, "write a pipeline job (type: pipeline, jobs: ...) or a component",
		"the top level must be keys such as type:, inputs: and jobs:")
}

// decodeMapping is decodeYAML for any file whose top level is a mapping:
// empty says what to write in an empty file, top what the top level holds.
func decodeMapping(d *diags, name string, data []byte, maxAlias int, empty, top string) *yaml.Node {
	filePos := plan.Pos{File: name}
	if strings.TrimSpace(stripComments(string(data))) == "" {
		d.errorf(filePos, empty, "file is empty")
		return nil
	}
	var doc yaml.Node
	err := yaml.Unmarshal(data, &doc)
	if err != nil {
		if tabIndents(d, name, data) {
			return nil
		}
		syntaxError(d, name, data, err)
		return nil
	}
	root := &doc
	if root.Kind == yaml.DocumentNode {
		if len(root.Content) == 0 {
			d.errorf(filePos, empty, "file is empty")
			return nil
		}
		root = root.Content[0]
	}
	root = deref(root)
	if root.Kind != yaml.MappingNode {
		// Never the scalar itself: a text file that is no YAML (a
		// password file named by mistake) is one long scalar.
		d.errorf(nodePos(name, root), top, "file is not a mapping: found %s", topKindName(root))
		return nil
	}
	if !checkAliases(d, name, root, maxAlias) {
		return nil
	}
	checkDuplicates(d, name, root, 0)
	return root
}

// topKindName is kindName without a scalar's text, for the top of a file.
func topKindName(n *yaml.Node) string {
	if n.Kind == yaml.ScalarNode && !isNull(n) {
		return "text (a single scalar)"
	}
	return kindName(n)
}

// stripComments drops comment-only lines so a file holding only comments
// counts as empty.
func stripComments(s string) string {
	var b strings.Builder
	for _, line := range strings.Split(s, "\n") {
		t := strings.TrimSpace(line)
		if t == "" || strings.HasPrefix(t, "#") || t == "---" {
			continue
		}
		b.WriteString(line)
		b.WriteByte('\n')
	}
	return b.String()
}

// tabIndents reports every line indented with a tab, and whether there was one.
func tabIndents(d *diags, name string, data []byte) bool {
	found := false
	for i, line := range strings.Split(string(data), "\n") {
		indent := line[:len(line)-len(strings.TrimLeft(line, " \t"))]
		if j := strings.IndexByte(indent, '\t'); j >= 0 {
			found = true
			d.errorf(plan.Pos{File: name, Line: i + 1, Col: j + 1}, "YAML indentation must use spaces: replace the tab with spaces",
				"tab character in indentation")
		}
	}
	return found
}

// syntaxError turns a yaml.v3 error into diagnostics, each placed at a
// line and column: yaml.v3 knows a line at most, and some errors have none.
func syntaxError(d *diags, name string, data []byte, err error) {
	var te *yaml.TypeError
	msgs := []string{err.Error()}
	if errors.As(err, &te) {
		msgs = te.Errors
	}
	for _, msg := range msgs {
		line, text := 0, msg
		if m := yamlLineRE.FindStringSubmatch(msg); m != nil {
			line, _ = strconv.Atoi(m[1])
			text = m[2]
		}
		if line == 0 {
			if at, summary, detail, ok := locateYAMLError(name, data, text); ok {
				d.errorf(at, detail, "%s", summary)
				continue
			}
		}
		at, ok := locateSyntax(name, data, text, line)
		if !ok {
			at = firstNonBlank(name, data, line)
		}
		d.errorf(at, syntaxAdvice(text), "yaml syntax error: %s", text)
	}
}

// checkDuplicates reports keys that appear twice in one mapping, anywhere in
// the tree.
func checkDuplicates(d *diags, name string, n *yaml.Node, depth int) {
	if n == nil || depth > 100 {
		return
	}
	if n.Kind == yaml.MappingNode {
		seen := map[string]*yaml.Node{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i]
			if k.Kind != yaml.ScalarNode || k.Value == "<<" {
				continue
			}
			if first, ok := seen[k.Value]; ok {
				d.errorf(nodePos(name, k), "remove one of them (the first is at line "+strconv.Itoa(first.Line)+")",
					"duplicate key %q", k.Value)
				continue
			}
			seen[k.Value] = k
		}
	}
	for _, c := range n.Content {
		checkDuplicates(d, name, c, depth+1)
	}
}

func deref(n *yaml.Node) *yaml.Node {
	for i := 0; n != nil && n.Kind == yaml.AliasNode && i < 100; i++ {
		n = n.Alias
	}
	return n
}

func nodePos(file string, n *yaml.Node) plan.Pos {
	if n == nil {
		return plan.Pos{File: file}
	}
	if n.Line == 0 && strings.HasPrefix(n.LineComment, setMark) {
		return plan.Pos{File: n.LineComment}
	}
	return plan.Pos{File: file, Line: n.Line, Col: n.Column}
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.SequenceNode:
		return "a list"
	case yaml.MappingNode:
		return "a mapping"
	case yaml.ScalarNode:
		if isNull(n) {
			return "null"
		}
		return "the scalar " + strconv.Quote(n.Value)
	}
	return "something else"
}

func isNull(n *yaml.Node) bool {
	return n == nil || (n.Kind == yaml.ScalarNode && n.Tag == "!!null")
}

// entry is one key: value pair of a mapping.
type entry struct {
	key, val *yaml.Node
}

// entries lists a mapping's pairs in order, following merge keys (<<).
func entries(n *yaml.Node) []entry {
	return mergedEntries(n, 0)
}

// maxMergeDepth bounds merge-key nesting, so that a mapping merging another
// twice, level upon level, cannot blow up.
const maxMergeDepth = 8

func mergedEntries(n *yaml.Node, depth int) []entry {
	n = deref(n)
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	var out []entry
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], deref(n.Content[i+1])
		if k.Value == "<<" && k.Tag == "!!merge" {
			if v != nil && v.Kind == yaml.MappingNode && depth < maxMergeDepth {
				out = append(out, mergedEntries(v, depth+1)...)
			}
			continue
		}
		out = append(out, entry{key: k, val: v})
	}
	return out
}
