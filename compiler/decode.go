package compiler

import (
	"bytes"
	"errors"
	"io"

	"go.yaml.in/yaml/v3"
)

// DecodeYAML parses a YAML file that is not a pipeline (a compute, an
// instance type) into its top-level mapping, with the checks pipelines
// get: syntax errors with a line, tabs in indentation, duplicate keys, an
// empty file. empty says what to write in an empty file, top what the top
// level must hold. The node is nil when the file is unusable.
func DecodeYAML(name string, data []byte, empty, top string) (*yaml.Node, Diagnostics) {
	var d diags
	if !checkNodes(&d, name, data, DefaultLimits.MaxYAMLNodes) {
		return nil, d.list
	}
	root := decodeMapping(&d, name, data, DefaultLimits.MaxAliasNodes, empty, top)
	return root, d.list
}

// CheckYAMLNodes reports a file holding more YAML nodes than
// limits.MaxYAMLNodes (its default when zero), at the node that passes
// it, for files read outside a compilation: yaml.v3 would build the whole
// tree before anything could look at it.
func CheckYAMLNodes(name string, data []byte, limits Limits) Diagnostics {
	var d diags
	checkNodes(&d, name, data, limits.withDefaults().MaxYAMLNodes)
	return d.list
}

// SyntaxDiagnostics turns the error yaml.v3 returned for data into
// diagnostics placed at a line and column, as the compiler reports syntax
// errors, for files decoded outside a compilation.
func SyntaxDiagnostics(name string, data []byte, err error) Diagnostics {
	var d diags
	syntaxError(&d, name, data, err)
	return d.list
}

// Suggest returns a did-you-mean sentence naming the candidate closest to
// name, or "" when none is close.
func Suggest(name string, candidates []string) string {
	return suggest(name, candidates)
}

// Sort orders the diagnostics by file, line and column, keeping the order
// they were found in for equal positions.
func (d Diagnostics) Sort() {
	sortDiagnostics(d)
}

// DecodeYAMLDocuments is DecodeYAML for a file of one or more documents
// separated by --- (as kubectl apply -f takes them): every document's top
// level must be a mapping; empty documents are skipped.
func DecodeYAMLDocuments(name string, data []byte, empty, top string) ([]*yaml.Node, Diagnostics) {
	var d diags
	if !checkNodes(&d, name, data, DefaultLimits.MaxYAMLNodes) {
		return nil, d.list
	}
	first := decodeMapping(&d, name, data, DefaultLimits.MaxAliasNodes, empty, top)
	if first == nil || len(d.list) > 0 {
		return nil, d.list
	}
	docs := []*yaml.Node{first}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	for i := 0; ; i++ {
		var doc yaml.Node
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			syntaxError(&d, name, data, err)
			return nil, d.list
		}
		if i == 0 || len(doc.Content) == 0 {
			continue
		}
		root := deref(doc.Content[0])
		switch {
		case isNull(root):
			continue
		case root.Kind != yaml.MappingNode:
			d.errorf(nodePos(name, root), top, "document is not a mapping: found %s", topKindName(root))
			continue
		case !checkAliases(&d, name, root, DefaultLimits.MaxAliasNodes):
			continue
		}
		checkDuplicates(&d, name, root, 0)
		docs = append(docs, root)
	}
	return docs, d.list
}

// KindName says what a YAML node is, for messages: "a list", "a mapping",
// "null" or "the scalar \"x\"".
func KindName(n *yaml.Node) string { return kindName(n) }

// IsNull says whether a node is absent or YAML's null.
func IsNull(n *yaml.Node) bool { return isNull(n) }
