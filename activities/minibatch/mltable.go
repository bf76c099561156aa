package minibatch

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
)

// yamlLine splits yaml.v3's "line N: message".
var yamlLine = regexp.MustCompile(`^line (\d+): (.*)$`)

// MLTableName is the name of the file that describes a tabular input.
const MLTableName = "MLTable"

// table is a tabular input resolved to its files and read options.
type table struct {
	files []file
	read  ReadOptions
	notes []string
	// source is the MLTable file, or the folder of CSV files.
	source string
	// root is the name, in the input's file system, of the folder
	// Read.Root names.
	root string
}

// encodings are the MLTable encodings porch can split: each is a superset of
// ASCII, so delimiters, quotes and line ends are single bytes.
var encodings = []string{"utf8", "utf8bom", "ascii", "latin1", "iso88591", "windows1252"}

var headerModes = []string{HeaderAllSame, HeaderFromFirst, HeaderAllDifferent, HeaderNone}

func defaultRead(root string) ReadOptions {
	return ReadOptions{Delimiter: ",", Encoding: "utf8", Header: HeaderAllSame, Root: root}
}

// loadTable resolves an mltable input: an MLTable file, a folder holding
// one, or a folder of *.csv files (recursively) read with default options.
func loadTable(src source, name string) (table, error) {
	p := src.path(name)
	info, err := fs.Stat(src.fsys, name)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return table{}, inputErrorf(p, 0, "the mltable input does not exist: check the input's path")
	case err != nil:
		return table{}, fmt.Errorf("read mltable input: %w", err)
	case !info.IsDir():
		return parseMLTable(src, name)
	}
	mlt := path.Join(name, MLTableName)
	if _, err := fs.Stat(src.fsys, mlt); err == nil {
		return parseMLTable(src, mlt)
	}
	files, err := listFolder(src, name, func(rel string) bool {
		return strings.HasSuffix(strings.ToLower(rel), ".csv") && !hidden(rel)
	})
	if err != nil {
		return table{}, err
	}
	if len(files) == 0 {
		return table{}, inputErrorf(p, 0, "the mltable input has no MLTable file and no .csv files: add an MLTable file that names the data, or put .csv files in the folder")
	}
	return table{files: files, read: defaultRead(p), source: p, root: name}, nil
}

// hidden says whether any element of a slash path starts with a dot.
func hidden(rel string) bool {
	for _, e := range strings.Split(rel, "/") {
		if strings.HasPrefix(e, ".") {
			return true
		}
	}
	return false
}

// parseMLTable reads an MLTable file: its paths and transformations.
func parseMLTable(src source, name string) (table, error) {
	file := src.path(name)
	data, err := fs.ReadFile(src.fsys, name)
	if err != nil {
		return table{}, fmt.Errorf("read MLTable file: %w", err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		line, msg := 0, strings.TrimPrefix(err.Error(), "yaml: ")
		if m := yamlLine.FindStringSubmatch(msg); m != nil {
			line, _ = strconv.Atoi(m[1])
			msg = m[2]
		}
		return table{}, inputErrorf(file, line, "the MLTable file is not valid YAML (%s): fix its syntax", msg)
	}
	if len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
		return table{}, inputErrorf(file, 1, "not an MLTable file: an mltable input is a folder holding an MLTable file (a YAML mapping with paths: and transformations:), or that file itself")
	}
	root := path.Dir(name)
	t := table{read: defaultRead(src.path(root)), source: file, root: root}
	var paths *yaml.Node
	top := doc.Content[0]
	for i := 0; i+1 < len(top.Content); i += 2 {
		k, v := top.Content[i], top.Content[i+1]
		switch k.Value {
		case "paths":
			paths = v
		case "transformations":
			if err := t.transformations(file, v); err != nil {
				return table{}, err
			}
		}
	}
	if paths == nil {
		return table{}, inputErrorf(file, top.Line, "the MLTable file has no paths: add paths: with - file:, - folder: or - pattern: entries")
	}
	if err := t.resolvePaths(src, file, root, paths); err != nil {
		return table{}, err
	}
	return t, nil
}

func (t *table) transformations(file string, seq *yaml.Node) error {
	if seq.Kind != yaml.SequenceNode {
		return inputErrorf(file, seq.Line, "transformations must be a list: write each as \"- read_delimited: ...\"")
	}
	for _, item := range seq.Content {
		name, v := item.Value, (*yaml.Node)(nil)
		if item.Kind == yaml.MappingNode && len(item.Content) == 2 {
			name, v = item.Content[0].Value, item.Content[1]
		} else if item.Kind != yaml.ScalarNode {
			return inputErrorf(file, item.Line, "a transformation must be a mapping with one key, such as \"- read_delimited: {delimiter: ','}\"")
		}
		var err error
		switch name {
		case "read_delimited":
			err = t.readDelimited(file, v)
		case "extract_columns_from_partition_format":
			err = t.partitionFormat(file, v)
		case "drop_columns":
			t.read.DropColumns, err = columnList(file, name, v)
		case "keep_columns":
			t.read.KeepColumns, err = columnList(file, name, v)
		default:
			err = inputErrorf(file, item.Line, "transformation %q is not supported: porch reads delimited text; use read_delimited, extract_columns_from_partition_format, drop_columns and keep_columns, or prepare the data in a step before", name)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func (t *table) readDelimited(file string, m *yaml.Node) error {
	if m == nil || m.Kind == yaml.ScalarNode && m.Tag == "!!null" {
		return nil
	}
	if m.Kind != yaml.MappingNode {
		return inputErrorf(file, m.Line, "read_delimited must be a mapping: write delimiter:, encoding:, header: and include_path_column: under it")
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := m.Content[i], m.Content[i+1]
		var err error
		switch k.Value {
		case "delimiter":
			if utf8.RuneCountInString(v.Value) != 1 || strings.ContainsAny(v.Value, "\"\r\n") {
				err = inputErrorf(file, v.Line, "read_delimited delimiter %q is not supported: porch splits on one character other than a quote or a line end, such as \",\", \";\" or \"\\t\"", v.Value)
			}
			t.read.Delimiter = v.Value
		case "encoding":
			if !slices.Contains(encodings, v.Value) {
				err = inputErrorf(file, v.Line, "read_delimited encoding %q is not supported: use one of %s, or convert the files to utf8", v.Value, strings.Join(encodings, ", "))
			}
			t.read.Encoding = v.Value
		case "header":
			if !slices.Contains(headerModes, v.Value) {
				err = inputErrorf(file, v.Line, "read_delimited header %q is unknown: use one of %s", v.Value, strings.Join(headerModes, ", "))
			}
			t.read.Header = v.Value
		case "include_path_column":
			err = v.Decode(&t.read.IncludePathColumn)
			if err != nil {
				err = inputErrorf(file, v.Line, "read_delimited include_path_column %q is not a boolean: write true or false", v.Value)
			}
		case "empty_as_string", "support_multi_line", "infer_column_types":
			t.notes = append(t.notes, fmt.Sprintf("%s:%d: read_delimited %s is ignored: porch always reads quoted line ends, and pandas reads empty fields and column types its own way", file, k.Line, k.Value))
		default:
			err = inputErrorf(file, k.Line, "read_delimited has no setting %q: use delimiter, encoding, header, include_path_column or empty_as_string", k.Value)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func (t *table) partitionFormat(file string, v *yaml.Node) error {
	if v != nil && v.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(v.Content); i += 2 {
			if v.Content[i].Value == "partition_format" {
				v = v.Content[i+1]
				break
			}
		}
	}
	if v == nil || v.Kind != yaml.ScalarNode || v.Value == "" {
		line := 0
		if v != nil {
			line = v.Line
		}
		return inputErrorf(file, line, "extract_columns_from_partition_format needs a format: write extract_columns_from_partition_format: \"{Store}/{Brand}/{file_name}.csv\"")
	}
	f := strings.TrimPrefix(strings.TrimPrefix(v.Value, "./"), "/")
	if _, _, err := compileFormat(f); err != nil {
		return inputErrorf(file, v.Line, "partition format %q is malformed (%v): name each column in braces, such as \"{Store}/{Brand}/{file_name}.csv\"", v.Value, err)
	}
	t.read.PartitionFormat = f
	return nil
}

// columnList reads a column name or a list of them.
func columnList(file, name string, v *yaml.Node) ([]string, error) {
	if v != nil && v.Kind == yaml.ScalarNode && v.Value != "" {
		return []string{v.Value}, nil
	}
	var cols []string
	if v == nil || v.Kind != yaml.SequenceNode || v.Decode(&cols) != nil || len(cols) == 0 {
		line := 0
		if v != nil {
			line = v.Line
		}
		return nil, inputErrorf(file, line, "%s needs column names: write %s: [a, b]", name, name)
	}
	return cols, nil
}

// resolvePaths lists the files of the paths: entries, in order, each file
// once. Folders and patterns leave out hidden files and MLTable files.
func (t *table) resolvePaths(src source, file, root string, seq *yaml.Node) error {
	if seq.Kind != yaml.SequenceNode || len(seq.Content) == 0 {
		return inputErrorf(file, seq.Line, "paths must be a list of - file:, - folder: or - pattern: entries")
	}
	seen := map[string]bool{}
	for _, item := range seq.Content {
		if item.Kind != yaml.MappingNode || len(item.Content) != 2 {
			return inputErrorf(file, item.Line, "a paths entry must have one key: file:, folder: or pattern:")
		}
		kind, v := item.Content[0].Value, item.Content[1]
		files, err := resolvePath(src, file, root, kind, v)
		if err != nil {
			return err
		}
		if len(files) == 0 {
			return inputErrorf(file, v.Line, "paths entry %s: %q matches no files: fix the path, or check that the step before wrote its output", kind, v.Value)
		}
		for _, f := range files {
			if !seen[f.path] {
				seen[f.path] = true
				t.files = append(t.files, f)
			}
		}
	}
	return nil
}

func resolvePath(src source, mlt, root, kind string, v *yaml.Node) ([]file, error) {
	if strings.Contains(v.Value, "://") || strings.HasPrefix(v.Value, "azureml:") {
		return nil, inputErrorf(mlt, v.Line, "paths entry %q is not local: porch reads only local files; download the data first and write its path relative to the MLTable file", v.Value)
	}
	name := path.Join(root, v.Value)
	if path.IsAbs(v.Value) {
		var ok bool
		if name, ok = src.name(path.Clean(v.Value)); !ok {
			return nil, inputErrorf(mlt, v.Line, "paths entry %q is absolute, which names no file of the MLTable file's datastore: write the path relative to the MLTable file", v.Value)
		}
	}
	if !fs.ValidPath(name) {
		return nil, inputErrorf(mlt, v.Line, "paths entry %q leaves the MLTable file's datastore: write a path inside it, relative to the MLTable file", v.Value)
	}
	p := src.path(name)
	keep := func(rel string) bool { return !hidden(rel) && path.Base(rel) != MLTableName }
	switch kind {
	case "file":
		info, err := fs.Stat(src.fsys, name)
		if err != nil || !info.Mode().IsRegular() {
			return nil, inputErrorf(mlt, v.Line, "paths entry file: %q is not a file (%s): fix the path, relative to the MLTable file's folder", v.Value, p)
		}
		return []file{{path: p, name: name, rel: relTo(root, name), size: info.Size()}}, nil
	case "folder":
		info, err := fs.Stat(src.fsys, name)
		if err != nil || !info.IsDir() {
			return nil, inputErrorf(mlt, v.Line, "paths entry folder: %q is not a folder (%s): fix the path, relative to the MLTable file's folder", v.Value, p)
		}
		return listFolder(src, name, keep)
	case "pattern":
		files, err := glob(src, name, keep)
		if err != nil {
			return nil, inputErrorf(mlt, v.Line, "paths entry pattern: %q is malformed (%v): use *, ?, [a-z] and ** as in ./**/*.csv", v.Value, err)
		}
		return files, nil
	}
	return nil, inputErrorf(mlt, v.Line, "paths entry %q is unknown: use file:, folder: or pattern:", kind)
}

// relTo is name's slash path relative to the folder root, both names in
// one file system.
func relTo(root, name string) string {
	rel, err := filepath.Rel(filepath.FromSlash(root), filepath.FromSlash(name))
	if err != nil {
		return name
	}
	return filepath.ToSlash(rel)
}
