package minibatch

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// quotedCSV has quoted fields holding the delimiter, a doubled quote and line
// ends, so a cut made on lines instead of records would split a row.
func quotedCSV(rows int) string {
	var b strings.Builder
	b.WriteString("id,text,n\r\n")
	for i := range rows {
		fmt.Fprintf(&b, "%d,\"line one, %d\nline \"\"two\"\"\n\",%d\r\n", i, i, i*i)
	}
	return b.String()
}

func TestSizeCutsOnRecordBoundaries(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, map[string]string{"a.csv": quotedCSV(40), "b.csv": quotedCSV(3)})
	sum, batches := planAll(t, Input{Type: TypeMLTable, Path: root, Size: "100"})
	require.Equal(t, int64(43), sum.Items)
	require.Greater(t, sum.Batches, 5)

	want := map[string][][]string{}
	got := map[string][][]string{}
	for _, f := range []string{"a.csv", "b.csv"} {
		p := filepath.Join(root, f)
		want[p] = csvRows(t, p)
	}
	var ends = map[string]int64{}
	for _, b := range batches {
		require.Len(t, b.Table.Parts, 1, "a batch never crosses files")
		p := b.Table.Parts[0]
		require.Equal(t, ends[p.Path], p.Offset, "parts of a file are contiguous")
		ends[p.Path] = p.Offset + p.Length
		require.Equal(t, p.Offset > 0, p.Header, "a part not at the file's start needs the header")
		if p.Header {
			require.Equal(t, int64(len("id,text,n\r\n")), p.HeaderLength)
			require.Empty(t, p.HeaderPath)
		}
		rows := readPart(t, p, ',', false)
		require.Len(t, rows, p.Rows)
		require.Equal(t, p.Rows, b.Items)
		if p.Offset+p.Length < fileSize(t, p.Path) {
			require.GreaterOrEqual(t, p.Length, int64(100), "only a file's last part is short")
		}
		got[p.Path] = append(got[p.Path], rows...)
	}
	require.Equal(t, want, got, "every row once, in order")
}

func TestSizeDefaultAndUnits(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, map[string]string{"a.csv": quotedCSV(3000)}) // about 110 KB
	sum, _ := planAll(t, Input{Type: TypeMLTable, Path: root})
	require.Equal(t, 1, sum.Batches, "default 1mb")
	sum, batches := planAll(t, Input{Type: TypeMLTable, Path: root, Size: "10kb"})
	size := fileSize(t, filepath.Join(root, "a.csv"))
	require.Equal(t, int(size/(10<<10)), sum.Batches-1, "every batch but the last reaches 10kb")
	for _, b := range batches[:len(batches)-1] {
		require.GreaterOrEqual(t, b.Table.Parts[0].Length, int64(10<<10))
		require.Less(t, b.Table.Parts[0].Length, int64(10<<10+100), "a batch ends at the record that reaches the size")
	}
	sumBare, _ := planAll(t, Input{Type: TypeMLTable, Path: root, Size: "10240"})
	require.Equal(t, sum.Digest, sumBare.Digest, "a bare number is bytes")
}

func TestHeaderModes(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, map[string]string{
		"1.csv": "k;v\nA;1\nB;2\nC;3\n",
		"2.csv": "D;4\nE;5\n",
		"0.csv": "", // empty: the first file with a record has the header
	})
	mlt := "paths:\n  - pattern: '*.csv'\ntransformations:\n  - read_delimited: {delimiter: ';', header: %s}\n"

	writeTree(t, root, map[string]string{"MLTable": fmt.Sprintf(mlt, HeaderFromFirst)})
	sum, batches := planAll(t, Input{Type: TypeMLTable, Path: root, Size: "5"})
	require.Equal(t, int64(5), sum.Items)
	var rows [][]string
	for _, b := range batches {
		rows = append(rows, readPart(t, b.Table.Parts[0], ';', false)...)
	}
	require.Equal(t, [][]string{{"A", "1"}, {"B", "2"}, {"C", "3"}, {"D", "4"}, {"E", "5"}}, rows)
	last := batches[len(batches)-1].Table.Parts[0]
	require.Equal(t, filepath.Join(root, "1.csv"), last.HeaderPath)
	require.Equal(t, int64(4), last.HeaderLength)
	require.True(t, last.Header)

	writeTree(t, root, map[string]string{"MLTable": fmt.Sprintf(mlt, HeaderNone)})
	sum, batches = planAll(t, Input{Type: TypeMLTable, Path: root})
	require.Equal(t, int64(6), sum.Items, "no_header: the first record is data")
	for _, b := range batches {
		require.False(t, b.Table.Parts[0].Header)
	}

	writeTree(t, root, map[string]string{"MLTable": fmt.Sprintf(mlt, HeaderAllDifferent)})
	sum, _ = planAll(t, Input{Type: TypeMLTable, Path: root})
	require.Equal(t, int64(4), sum.Items, "every file's first record is its header")
}

func TestPartitionKeysFromColumns(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, map[string]string{
		"a.csv": "\ufeffstore,brand,qty\n1,x,5\n2,y,6\n1,x,7\n01,x,8\n",
		"b.csv": "store,brand,qty\n2,y,1\n3,\"z,z\",2\n1,x,3\n1\x00x,,9\n",
		"c.csv": "store,brand,qty\n", // no rows: in no batch
	})
	sum, batches := planAll(t, Input{Type: TypeMLTable, Path: root, Size: "1", PartitionKeys: []string{"store", "brand"}})
	require.Equal(t, int64(8), sum.Items)
	type got struct {
		values []string
		parts  []string
		rows   []int
	}
	var all []got
	for _, b := range batches {
		g := got{values: b.Table.PartitionValues}
		require.Equal(t, []string{"store", "brand"}, b.Table.PartitionKeys)
		n := 0
		for _, p := range b.Table.Parts {
			g.parts = append(g.parts, filepath.Base(p.Path))
			g.rows = append(g.rows, p.Rows)
			require.Zero(t, p.Offset)
			require.False(t, p.Header)
			n += p.Rows
		}
		require.Equal(t, n, b.Items)
		all = append(all, g)
	}
	require.Equal(t, []got{
		{[]string{"1", "x"}, []string{"a.csv", "b.csv"}, []int{2, 1}},
		{[]string{"2", "y"}, []string{"a.csv", "b.csv"}, []int{1, 1}},
		{[]string{"01", "x"}, []string{"a.csv"}, []int{1}},
		{[]string{"3", "z,z"}, []string{"b.csv"}, []int{1}},
		{[]string{"1\x00x", ""}, []string{"b.csv"}, []int{1}},
	}, all)
	require.Equal(t, int64(len("\ufeffstore,brand,qty\n1,x,5\n2,y,6\n1,x,7\n01,x,8\n")), batches[2].Table.Parts[0].Length, "a whole file")
}

func TestPartitionKeysFromFormat(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, map[string]string{
		"MLTable":       "paths:\n  - pattern: ./**/*.csv\ntransformations:\n  - extract_columns_from_partition_format: '{Store}/{Brand}/{file_name}.csv'\n",
		"s1/b1/x.csv":   "qty,day\n1,mon\n2,tue\n",
		"s1/b2/x.csv":   "qty,day\n3,mon\n",
		"s2/b1/y.z.csv": "qty,day\n4,mon\n5,mon\n",
	})
	_, batches := planAll(t, Input{Type: TypeMLTable, Path: root, PartitionKeys: []string{"Store"}})
	require.Len(t, batches, 2)
	require.Equal(t, []string{"s1"}, batches[0].Table.PartitionValues)
	require.Equal(t, 3, batches[0].Items)
	require.Len(t, batches[0].Table.Parts, 2)
	require.Equal(t, []string{"s2"}, batches[1].Table.PartitionValues)

	// Keys mix the path and the columns; order is first appearance.
	_, batches = planAll(t, Input{Type: TypeMLTable, Path: root, PartitionKeys: []string{"day", "file_name"}})
	var values []string
	for _, b := range batches {
		values = append(values, strings.Join(b.Table.PartitionValues, "/")+fmt.Sprint(b.Items))
	}
	require.Equal(t, []string{"mon/x2", "tue/x1", "mon/y.z2"}, values)
}

func TestPartitionKeyNoHeader(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, map[string]string{
		"MLTable": "paths:\n  - file: a.csv\ntransformations:\n  - read_delimited:\n      header: no_header\n",
		"a.csv":   "x,1\ny,2\nx,3\n",
	})
	_, batches := planAll(t, Input{Type: TypeMLTable, Path: root, PartitionKeys: []string{"Column1"}})
	require.Len(t, batches, 2)
	require.Equal(t, 2, batches[0].Items)
	err := planErr(t, Input{Type: TypeMLTable, Path: root, PartitionKeys: []string{"k"}})
	require.Equal(t, filepath.Join(root, "a.csv")+`:1: partition key "k" is not a column of the file (with header no_header, columns are named Column1, Column2, ...): use one of "Column1", "Column2" in partition_keys`, err.Error())
}

func TestPartitionErrors(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, map[string]string{
		"MLTable":  "paths:\n  - pattern: ./**/*.csv\ntransformations:\n  - extract_columns_from_partition_format: '{Store}/{file_name}.csv'\n",
		"s1/a.csv": "qty,day\n1,mon\n",
		"b.csv":    "qty,day\n1,mon\n",
	})
	err := planErr(t, Input{Type: TypeMLTable, Path: root, PartitionKeys: []string{"Day"}})
	require.Equal(t, filepath.Join(root, "b.csv")+`:1: partition key "Day" is not a column of the file: use one of "qty", "day", "Store", "file_name" in partition_keys`, err.Error())
	err = planErr(t, Input{Type: TypeMLTable, Path: root, PartitionKeys: []string{"Store"}})
	require.Equal(t, filepath.Join(root, "b.csv")+`: the file's path "b.csv" does not match the partition format "{Store}/{file_name}.csv", so partition key "Store" has no value: fix the format in `+filepath.Join(root, "MLTable")+`, or move the file`, err.Error())
}
