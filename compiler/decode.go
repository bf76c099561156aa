package compiler

import (
	"go.yaml.in/yaml/v3"
)

// DecodeYAML parses a YAML file that is not a pipeline (a compute, an
// instance type) into its top-level mapping, with the checks pipelines
// get: syntax errors with a line, tabs in indentation, duplicate keys, an
// empty file. empty says what to write in an empty file, top what the top
// level must hold. The node is nil when the file is unusable.
func DecodeYAML(name string, data []byte, empty, top string) (*yaml.Node, Diagnostics) {
	var d diags
	root := decodeMapping(&d, name, data, empty, top)
	return root, d.list
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
