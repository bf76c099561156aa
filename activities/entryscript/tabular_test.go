package entryscript

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// tableScript records what run() got and returns the DataFrame.
const tableScript = `
import os
OUT = os.environ["OUT"]
def run(mini_batch, mini_batch_context):
    with open(os.path.join(OUT, "info"), "w") as f:
        f.write("%r\n" % (mini_batch_context.partition_key_value,))
        f.write("%s\n" % mini_batch_context.minibatch_index)
        f.write(" ".join("%s:%s" % (c, t) for c, t in mini_batch.dtypes.items()) + "\n")
    return mini_batch
`

func writeFile(t *testing.T, path, text string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(t, os.WriteFile(path, []byte(text), 0o644))
}

func tableJSON(t *testing.T, table map[string]any) json.RawMessage {
	t.Helper()
	b, err := json.Marshal(table)
	require.NoError(t, err)
	return b
}

func tabularFixture(t *testing.T, script string) *fixture {
	f := newFixture(t, script)
	f.opts.Python = pandasPython(t)
	f.opts.Tabular = true
	return f
}

func TestTableWithPartitionsAndPathColumns(t *testing.T) {
	f := tabularFixture(t, tableScript)
	root := t.TempDir()
	header := "week,region,units\n"
	first := "1,north,10\n2,south,20\n"
	sales := filepath.Join(root, "1000", "dominicks", "sales.csv")
	writeFile(t, sales, header+first+"3,north,30\n4,north,40\n")
	table := tableJSON(t, map[string]any{
		"read": map[string]any{
			"delimiter": ",", "encoding": "utf8", "header": "all_files_same_headers",
			"include_path_column": true, "partition_format": "{Store}/{Brand}/{file_name}.csv",
			"root": root, "drop_columns": []string{"file_name"},
		},
		"parts": []map[string]any{
			{"path": sales, "offset": 0, "length": len(header + first), "rows": 1},
			// The second part starts mid-file: the header is prepended.
			{"path": sales, "offset": len(header + first), "length": 0, "header": true,
				"header_length": len(header), "rows": 2},
		},
		"partition_keys":   []string{"Store", "region"},
		"partition_values": []string{"1000", "north"},
	})
	p := f.pool(t, 1)
	out := filepath.Join(f.out, "result.csv")
	res, err := p.Run(context.Background(), Request{Index: 5, Table: table, ResultPath: out})
	require.NoError(t, err)
	assert.Equal(t, 3, res.Items, "rows of the partition")
	assert.Equal(t, 3, res.Returned)
	b, err := os.ReadFile(out)
	require.NoError(t, err)
	assert.Equal(t, `week,region,units,Store,Brand,Path
1,north,10,1000,dominicks,1000/dominicks/sales.csv
3,north,30,1000,dominicks,1000/dominicks/sales.csv
4,north,40,1000,dominicks,1000/dominicks/sales.csv
`, string(b))
	assert.Equal(t, []string{
		"{'Store': 1000, 'region': 'north'}",
		"5",
		"week:int64 region:object units:int64 Store:int64 Brand:object Path:object",
	}, lines(f.read(t, "info")))
}

func TestTableHeaderFromAnotherFileAndNoHeader(t *testing.T) {
	f := tabularFixture(t, "def run(mini_batch):\n    return mini_batch\n")
	root := t.TempDir()
	a, b := filepath.Join(root, "a.csv"), filepath.Join(root, "b.csv")
	writeFile(t, a, "x;y\n1;2\n")
	writeFile(t, b, "3;4\n")
	p := f.pool(t, 1)
	cases := []struct {
		header string
		parts  []map[string]any
		want   string
	}{
		{"from_first_file", []map[string]any{
			{"path": a, "offset": 0, "length": 0},
			{"path": b, "offset": 0, "length": 0, "header": true, "header_path": a, "header_length": 4},
		}, "x,y\n1,2\n3,4\n"},
		{"no_header", []map[string]any{{"path": b, "offset": 0, "length": 0}}, "Column1,Column2\n3,4\n"},
	}
	for i, c := range cases {
		out := filepath.Join(f.out, c.header+".csv")
		table := tableJSON(t, map[string]any{
			"read":  map[string]any{"delimiter": ";", "encoding": "utf8", "header": c.header, "root": root},
			"parts": c.parts,
		})
		_, err := p.Run(context.Background(), Request{Index: i, Table: table, ResultPath: out})
		require.NoError(t, err, c.header)
		got, err := os.ReadFile(out)
		require.NoError(t, err)
		assert.Equal(t, c.want, string(got), c.header)
	}
}

func TestTableLoadProblems(t *testing.T) {
	f := tabularFixture(t, "def run(mini_batch):\n    return mini_batch\n")
	root := t.TempDir()
	csv := filepath.Join(root, "x", "data.csv")
	writeFile(t, csv, "a,b\n1,2\n")
	fifo := filepath.Join(root, "fifo.csv")
	require.NoError(t, syscall.Mkfifo(fifo, 0o644))
	p := f.pool(t, 1)
	read := map[string]any{"delimiter": ",", "header": "all_files_same_headers", "root": root}

	missing := tableJSON(t, map[string]any{"read": read, "parts": []map[string]any{{"path": filepath.Join(root, "gone.csv")}}})
	_, err := p.Run(context.Background(), Request{Table: missing})
	be := batchError(t, err, KindLoadFailed)
	assert.Contains(t, be.Message, "loading the mini-batch failed: cannot read "+filepath.Join(root, "gone.csv"))

	format := map[string]any{"delimiter": ",", "root": root, "partition_format": "{a}/{b}/{c}.csv"}
	bad := tableJSON(t, map[string]any{"read": format, "parts": []map[string]any{{"path": csv}}})
	_, err = p.Run(context.Background(), Request{Table: bad})
	be = batchError(t, err, KindLoadFailed)
	assert.Contains(t, be.Message, `file x/data.csv does not match partition_format '{a}/{b}/{c}.csv'`)

	key := tableJSON(t, map[string]any{"read": read, "parts": []map[string]any{{"path": csv}},
		"partition_keys": []string{"Store"}, "partition_values": []string{"1"}})
	_, err = p.Run(context.Background(), Request{Table: key})
	be = batchError(t, err, KindLoadFailed)
	assert.Contains(t, be.Message, `partition key 'Store' is not a column of `+csv+" (columns: a, b)")

	// Opening a FIFO with no writer blocks: the load never finishes.
	stuck := tableJSON(t, map[string]any{"read": read, "parts": []map[string]any{{"path": fifo}}})
	_, err = p.Run(context.Background(), Request{Table: stuck, LoadTimeout: 400 * time.Millisecond})
	be = batchError(t, err, KindLoadTimeout)
	assert.Equal(t, "loading the mini-batch did not finish within task_overhead_timeout (0.4s)", be.Message)
}

func TestTabularWithoutPandasFailsInit(t *testing.T) {
	f := newFixture(t, "def run(mini_batch):\n    return mini_batch\n")
	f.opts.Tabular = true
	f.opts.Python = ""
	for _, p := range pythonCandidates() {
		if !hasPandas(p) {
			f.opts.Python = p
			break
		}
	}
	if f.opts.Python == "" {
		// Every interpreter here has pandas: hide it behind a module that
		// fails to import, as a missing one does.
		shadow := t.TempDir()
		writeFile(t, filepath.Join(shadow, "pandas.py"), "raise ModuleNotFoundError(\"No module named 'pandas'\")\n")
		f.opts.Python = testPython(t)
		f.opts.Env = append(f.opts.Env, "PYTHONPATH="+shadow)
	}
	_, err := f.pool(t, 1).Run(context.Background(), Request{Table: json.RawMessage(`{"parts": []}`)})
	be := batchError(t, err, KindInitFailed)
	assert.True(t, strings.HasPrefix(be.Message, "the step's input is tabular, so run() gets a pandas DataFrame, but pandas cannot be imported by "), be.Message)
	assert.Contains(t, be.Message, "No module named 'pandas'")
	assert.Contains(t, be.Message, "install pandas for that interpreter")
}
