package minibatch

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// partPaths returns each batch's first part's path relative to root.
func partPaths(t *testing.T, root string, batches []Batch) []string {
	t.Helper()
	var got []string
	for _, b := range batches {
		require.NotNil(t, b.Table)
		for _, p := range b.Table.Parts {
			got = append(got, filepath.ToSlash(relTo(root, p.Path)))
		}
	}
	return got
}

func TestMLTablePaths(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, map[string]string{
		"MLTable": `$schema: https://azuremlschemas.azureedge.net/latest/MLTable.schema.json
type: mltable
paths:
  - file: ./top.csv
  - folder: ./dir
  - pattern: ./**/*.tsv.csv
  - file: dir/b.csv   # named twice: read once, where it first appears
`,
		"top.csv":            "a\n1\n",
		"dir/b.csv":          "a\n2\n",
		"dir/a.csv":          "a\n3\n",
		"dir/.hidden.csv":    "a\n4\n",
		"dir/MLTable":        "paths: []\n",
		"x/y/z/deep.tsv.csv": "a\n5\n",
		"shallow.tsv.csv":    "a\n6\n",
		"x/not-matching.csv": "a\n7\n",
	})
	sum, batches := planAll(t, Input{Type: TypeMLTable, Path: root})
	require.True(t, sum.Tabular)
	require.Equal(t, []string{"top.csv", "dir/a.csv", "dir/b.csv", "shallow.tsv.csv", "x/y/z/deep.tsv.csv"}, partPaths(t, root, batches))
	require.Equal(t, 5, sum.Files)
	require.Equal(t, int64(5), sum.Items)
	require.Equal(t, ReadOptions{Delimiter: ",", Encoding: "utf8", Header: HeaderAllSame, Root: root}, batches[0].Table.Read)

	// The MLTable file's own path plans the same batches.
	sum2, _ := planAll(t, Input{Type: TypeMLTable, Path: filepath.Join(root, "MLTable")})
	require.Equal(t, sum.Digest, sum2.Digest)
}

func TestMLTableGlobForms(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, map[string]string{
		"MLTable":             "paths:\n  - pattern: data/**/part-?.csv\n  - pattern: data/[xy]/*.csv\n",
		"data/part-1.csv":     "a\n1\n",
		"data/m/n/part-2.csv": "a\n2\n",
		"data/m/part-10.csv":  "a\n3\n",
		"data/x/other.csv":    "a\n4\n",
		"data/z/other.csv":    "a\n5\n",
	})
	_, batches := planAll(t, Input{Type: TypeMLTable, Path: root})
	require.Equal(t, []string{"data/m/n/part-2.csv", "data/part-1.csv", "data/x/other.csv"}, partPaths(t, root, batches))
}

func TestFolderOfCSVWithoutMLTable(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, map[string]string{
		"b.csv": "a\n1\n", "sub/a.CSV": "a\n2\n", "notes.txt": "x", ".tmp/c.csv": "a\n3\n",
	})
	_, batches := planAll(t, Input{Type: TypeMLTable, Path: root})
	require.Equal(t, []string{"b.csv", "sub/a.CSV"}, partPaths(t, root, batches))
	require.Equal(t, defaultRead(root), batches[0].Table.Read)
}

func TestMLTableTransformations(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, map[string]string{
		"MLTable": `paths:
  - pattern: ./**/*.csv
transformations:
  - read_delimited:
      delimiter: ";"
      encoding: latin1
      header: from_first_file
      include_path_column: true
      empty_as_string: false
  - extract_columns_from_partition_format:
      partition_format: "/{Store}/{file_name}.csv"
  - drop_columns: [x, "y"]
  - keep_columns: z
`,
		"s1/a.csv": "z;x\n1;2\n",
	})
	sum, batches := planAll(t, Input{Type: TypeMLTable, Path: root})
	require.Equal(t, ReadOptions{
		Delimiter: ";", Encoding: "latin1", Header: HeaderFromFirst, IncludePathColumn: true,
		PartitionFormat: "{Store}/{file_name}.csv", Root: root,
		DropColumns: []string{"x", "y"}, KeepColumns: []string{"z"},
	}, batches[0].Table.Read)
	mlt := filepath.Join(root, "MLTable")
	require.Equal(t, []string{mlt + ":9: read_delimited empty_as_string is ignored: porch always reads quoted line ends, and pandas reads empty fields and column types its own way"}, sum.Notes)

	// The format may be the transformation's value itself.
	writeTree(t, root, map[string]string{"MLTable": "paths:\n  - file: s1/a.csv\ntransformations:\n  - extract_columns_from_partition_format: '{Store}/{file_name}.csv'\n  - read_delimited: {delimiter: \"\\t\"}\n"})
	_, batches = planAll(t, Input{Type: TypeMLTable, Path: root})
	require.Equal(t, "{Store}/{file_name}.csv", batches[0].Table.Read.PartitionFormat)
	require.Equal(t, "\t", batches[0].Table.Read.Delimiter)
}

func TestMLTableErrors(t *testing.T) {
	root := t.TempDir()
	mlt := filepath.Join(root, "MLTable")
	writeTree(t, root, map[string]string{"a.csv": "a\n1\n", "empty/x.txt": ""})
	for _, tc := range []struct {
		name, mltable, want string
	}{
		{"yaml syntax", "paths: [\n", ":1: the MLTable file is not valid YAML (did not find expected node content): fix its syntax"},
		{"not a mapping", "- a\n", ":1: not an MLTable file: an mltable input is a folder holding an MLTable file (a YAML mapping with paths: and transformations:), or that file itself"},
		{"no paths", "type: mltable\n", ":1: the MLTable file has no paths: add paths: with - file:, - folder: or - pattern: entries"},
		{"paths not a list", "paths: a.csv\n", ":1: paths must be a list of - file:, - folder: or - pattern: entries"},
		{"two keys", "paths:\n  - file: a.csv\n    folder: .\n", ":2: a paths entry must have one key: file:, folder: or pattern:"},
		{"unknown kind", "paths:\n  - files: a.csv\n", `:2: paths entry "files" is unknown: use file:, folder: or pattern:`},
		{"remote", "paths:\n  - file: https://x.blob/a.csv\n", `:2: paths entry "https://x.blob/a.csv" is not local: porch reads only local files; download the data first and write its path relative to the MLTable file`},
		{"missing file", "paths:\n  - file: b.csv\n", `:2: paths entry file: "b.csv" is not a file (` + filepath.Join(root, "b.csv") + `): fix the path, relative to the MLTable file's folder`},
		{"missing folder", "paths:\n  - folder: nope\n", `:2: paths entry folder: "nope" is not a folder (` + filepath.Join(root, "nope") + `): fix the path, relative to the MLTable file's folder`},
		{"empty folder", "paths:\n  - folder: ./empty/sub/..\n  - pattern: ./*.parquet\n", ":3: paths entry pattern: \"./*.parquet\" matches no files: fix the path, or check that the step before wrote its output"},
		{"bad pattern", "paths:\n  - pattern: ./[a.csv\n", `:2: paths entry pattern: "./[a.csv" is malformed (syntax error in pattern): use *, ?, [a-z] and ** as in ./**/*.csv`},
		{"parquet", "paths:\n  - file: a.csv\ntransformations:\n  - read_parquet:\n      include_path_column: true\n", `:4: transformation "read_parquet" is not supported: porch reads delimited text; use read_delimited, extract_columns_from_partition_format, drop_columns and keep_columns, or prepare the data in a step before`},
		{"take", "paths:\n  - file: a.csv\ntransformations:\n  - take: 10\n", `:4: transformation "take" is not supported: porch reads delimited text`},
		{"filter", "paths:\n  - file: a.csv\ntransformations:\n  - filter: 'col(\"a\") > 1'\n", `:4: transformation "filter" is not supported`},
		{"transformations not a list", "paths:\n  - file: a.csv\ntransformations:\n  read_delimited: {}\n", `:4: transformations must be a list: write each as "- read_delimited: ..."`},
		{"delimiter", "paths:\n  - file: a.csv\ntransformations:\n  - read_delimited:\n      delimiter: '||'\n", `:5: read_delimited delimiter "||" is not supported: porch splits on one character other than a quote or a line end, such as ",", ";" or "\t"`},
		{"encoding", "paths:\n  - file: a.csv\ntransformations:\n  - read_delimited:\n      encoding: utf16\n", `:5: read_delimited encoding "utf16" is not supported: use one of utf8, utf8bom, ascii, latin1, iso88591, windows1252, or convert the files to utf8`},
		{"header", "paths:\n  - file: a.csv\ntransformations:\n  - read_delimited:\n      header: yes_please\n", `:5: read_delimited header "yes_please" is unknown: use one of all_files_same_headers, from_first_file, all_files_different_headers, no_header`},
		{"include_path_column", "paths:\n  - file: a.csv\ntransformations:\n  - read_delimited:\n      include_path_column: maybe\n", `:5: read_delimited include_path_column "maybe" is not a boolean: write true or false`},
		{"read_delimited key", "paths:\n  - file: a.csv\ntransformations:\n  - read_delimited:\n      delimeter: ';'\n", `:5: read_delimited has no setting "delimeter": use delimiter, encoding, header, include_path_column or empty_as_string`},
		{"partition format", "paths:\n  - file: a.csv\ntransformations:\n  - extract_columns_from_partition_format: '{Store/{x}.csv'\n", `:4: partition format "{Store/{x}.csv" is malformed (bad column name "{Store/{x}"): name each column in braces, such as "{Store}/{Brand}/{file_name}.csv"`},
		{"partition format missing", "paths:\n  - file: a.csv\ntransformations:\n  - extract_columns_from_partition_format: {}\n", `:4: extract_columns_from_partition_format needs a format: write extract_columns_from_partition_format: "{Store}/{Brand}/{file_name}.csv"`},
		{"drop_columns", "paths:\n  - file: a.csv\ntransformations:\n  - drop_columns: {a: 1}\n", `:4: drop_columns needs column names: write drop_columns: [a, b]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			writeTree(t, root, map[string]string{"MLTable": tc.mltable})
			got := planErr(t, Input{Type: TypeMLTable, Path: root}).Error()
			require.Contains(t, got, tc.want)
			require.Contains(t, got, mlt+":", "the message names the MLTable file")
		})
	}
}

func TestMLTableInputErrors(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, map[string]string{"notes.txt": "x", ".cache/a.csv": "a\n1\n", "MLTable.bak": "x"})
	missing := filepath.Join(root, "missing")
	require.Equal(t, missing+": the mltable input does not exist: check the input's path",
		planErr(t, Input{Type: TypeMLTable, Path: missing}).Error())
	require.Equal(t, root+": the mltable input has no MLTable file and no .csv files: add an MLTable file that names the data, or put .csv files in the folder",
		planErr(t, Input{Type: TypeMLTable, Path: root}).Error())
	for _, size := range []string{"1 mb", "0kb"} {
		writeTree(t, root, map[string]string{"a.csv": "a\n1\n"})
		require.Contains(t, planErr(t, Input{Type: TypeMLTable, Path: root, Size: size}).Error(), fmt.Sprintf("mini_batch_size %q is", size))
	}
}
