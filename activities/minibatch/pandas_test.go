package minibatch

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// pandasReader reads tabular batches the way doc.go tells the Python driver
// to, and prints each batch's rows as JSON lists of strings. It asserts that
// every part yields Part.Rows rows.
const pandasReader = `
import io, json, sys
import pandas as pd

ENCODINGS = {"utf8": "utf-8", "utf8bom": "utf-8-sig", "ascii": "ascii", "latin1": "latin-1",
             "iso88591": "latin-1", "windows1252": "cp1252"}

def read_range(path, offset, length):
    with open(path, "rb") as f:
        f.seek(offset)
        return f.read(length)

out = []
for batch in json.load(open(sys.argv[1])):
    table, frames = batch["table"], []
    read = table["read"]
    for part in table["parts"]:
        data = b""
        if part["header"]:
            data = read_range(part.get("header_path") or part["path"], 0, part["header_length"])
        data += read_range(part["path"], part["offset"], part["length"])
        no_header = read["header"] == "no_header"
        df = pd.read_csv(io.BytesIO(data), sep=read["delimiter"], encoding=ENCODINGS[read["encoding"]],
                         header=None if no_header else 0, dtype=str, keep_default_na=False)
        if no_header:
            df.columns = ["Column%d" % (i + 1) for i in range(len(df.columns))]
        for key, value in zip(table.get("partition_keys") or [], table.get("partition_values") or []):
            df = df[df[key] == value]
        assert len(df) == part["rows"], (part, len(df))
        frames.append(df)
    out.append(pd.concat(frames).values.tolist())
json.dump(out, sys.stdout)
`

// pandasPython returns an interpreter that imports pandas: $PORCH_PYTHON,
// else Debian's /usr/bin/python3, else python3 on PATH. It skips the test
// when none does.
func pandasPython(t *testing.T) string {
	t.Helper()
	python := findPandasPython()
	if python == "" {
		t.Skip("no Python with pandas (tried $PORCH_PYTHON, /usr/bin/python3, python3): sudo apt-get install -y python3-pandas")
	}
	return python
}

// findPandasPython looks once: importing pandas takes seconds here.
var findPandasPython = sync.OnceValue(func() string {
	for _, c := range []string{os.Getenv("PORCH_PYTHON"), "/usr/bin/python3", "python3"} {
		if c != "" && exec.Command(c, "-c", "import pandas").Run() == nil {
			return c
		}
	}
	return ""
})

// readWithPandas reads every batch of the manifest in dir with pandasReader.
func readWithPandas(t *testing.T, python, dir string) [][][]string {
	t.Helper()
	m, err := Open(dir)
	require.NoError(t, err)
	defer m.Close()
	batches := make([]Batch, m.Len())
	for i := range batches {
		batches[i], err = m.Batch(i)
		require.NoError(t, err)
	}
	tmp := t.TempDir()
	data, err := json.Marshal(batches)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(tmp, "batches.json"), data, 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(tmp, "read.py"), []byte(pandasReader), 0o644))
	cmd := exec.Command(python, filepath.Join(tmp, "read.py"), filepath.Join(tmp, "batches.json"))
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	require.NoError(t, err)
	var rows [][][]string
	require.NoError(t, json.Unmarshal(out, &rows))
	return rows
}

func TestPandasReadsSizeCuts(t *testing.T) {
	python := pandasPython(t)
	root := t.TempDir()
	writeTree(t, root, map[string]string{"a.csv": quotedCSV(30), "b.csv": quotedCSV(4)})
	dir := t.TempDir()
	sum, err := Plan(Input{Type: TypeMLTable, Path: root, Size: "200"}, dir)
	require.NoError(t, err)
	require.Greater(t, sum.Batches, 5)
	var got [][]string
	for _, b := range readWithPandas(t, python, dir) {
		got = append(got, b...)
	}
	want := append(csvRows(t, filepath.Join(root, "a.csv")), csvRows(t, filepath.Join(root, "b.csv"))...)
	require.Equal(t, want, got, "every row once, in order, quoted line ends intact")
}

func TestPandasReadsHeaderFromFirstFile(t *testing.T) {
	python := pandasPython(t)
	root := t.TempDir()
	writeTree(t, root, map[string]string{
		"MLTable": "paths:\n  - pattern: '*.csv'\ntransformations:\n  - read_delimited: {delimiter: ';', header: from_first_file}\n",
		"1.csv":   "k;v\nA;1\nB;2\nC;3\n",
		"2.csv":   "D;4\nE;5\n",
	})
	dir := t.TempDir()
	_, err := Plan(Input{Type: TypeMLTable, Path: root, Size: "4"}, dir)
	require.NoError(t, err)
	var got [][]string
	for _, b := range readWithPandas(t, python, dir) {
		got = append(got, b...)
	}
	require.Equal(t, [][]string{{"A", "1"}, {"B", "2"}, {"C", "3"}, {"D", "4"}, {"E", "5"}}, got)
}

func TestPandasReadsPartitions(t *testing.T) {
	python := pandasPython(t)
	root := t.TempDir()
	writeTree(t, root, map[string]string{
		"a.csv": "store,qty\n1,5\n2,6\n1,7\n01,8\n",
		"b.csv": "store,qty\n2,1\n1,3\n",
	})
	dir := t.TempDir()
	_, err := Plan(Input{Type: TypeMLTable, Path: root, PartitionKeys: []string{"store"}}, dir)
	require.NoError(t, err)
	require.Equal(t, [][][]string{
		{{"1", "5"}, {"1", "7"}, {"1", "3"}},
		{{"2", "6"}, {"2", "1"}},
		{{"01", "8"}},
	}, readWithPandas(t, python, dir))
}
