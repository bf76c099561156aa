package minibatch

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestDigest(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, map[string]string{"a.csv": quotedCSV(50), "b.csv": quotedCSV(20)})
	in := Input{Type: TypeMLTable, Path: root, Size: "1kb"}
	dir := t.TempDir()
	first, err := Plan(in, dir)
	require.NoError(t, err)
	again, err := Plan(in, dir) // replaces the manifest in place
	require.NoError(t, err)
	require.Equal(t, first, again)
	other, err := Plan(in, t.TempDir())
	require.NoError(t, err)
	require.Equal(t, first.Digest, other.Digest, "the digest does not depend on where the manifest is")

	in.Size = "2kb"
	changed, err := Plan(in, dir)
	require.NoError(t, err)
	require.NotEqual(t, first.Digest, changed.Digest)
	in.Size, in.PartitionKeys = "1kb", []string{"n"}
	keyed, err := Plan(in, dir)
	require.NoError(t, err)
	require.NotEqual(t, first.Digest, keyed.Digest)

	m, err := Open(dir)
	require.NoError(t, err)
	defer m.Close()
	require.Equal(t, keyed, m.Summary(), "the latest plan replaced the manifest")
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, entries, 1, "no temporary file is left behind")
}

func TestFailedPlanKeepsManifest(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, map[string]string{"a.csv": "k\n1\n"})
	dir := t.TempDir()
	sum, err := Plan(Input{Type: TypeMLTable, Path: root}, dir)
	require.NoError(t, err)
	_, err = Plan(Input{Type: TypeMLTable, Path: root, PartitionKeys: []string{"nope"}}, dir)
	require.Error(t, err)
	m, err := Open(dir)
	require.NoError(t, err)
	defer m.Close()
	require.Equal(t, sum, m.Summary())
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, entries, 1, "the failed plan's temporary file is removed")
}

func TestBatchJSON(t *testing.T) {
	b := Batch{Index: 3, Items: 2, Table: &Table{
		Read:  ReadOptions{Delimiter: ",", Encoding: "utf8", Header: HeaderAllSame, Root: "/d"},
		Parts: []Part{{Path: "/d/a.csv", Offset: 10, Length: 20, Header: true, HeaderLength: 4, Rows: 2}},
	}}
	data, err := json.Marshal(b)
	require.NoError(t, err)
	require.JSONEq(t, `{"index":3,"items":2,"table":{"read":{"delimiter":",","encoding":"utf8","header":"all_files_same_headers","root":"/d"},
		"parts":[{"path":"/d/a.csv","offset":10,"length":20,"header":true,"header_length":4,"rows":2}]}}`, string(data))
}

func TestOpenErrors(t *testing.T) {
	dir := t.TempDir()
	_, err := Open(dir)
	require.ErrorContains(t, err, "open mini-batch manifest: ")

	root := t.TempDir()
	writeTree(t, root, map[string]string{"a": "1", "b": "2"})
	_, err = Plan(Input{Type: TypeURIFolder, Path: root, Size: "1"}, dir)
	require.NoError(t, err)
	m, err := Open(dir)
	require.NoError(t, err)
	_, err = m.Batch(2)
	require.EqualError(t, err, fmt.Sprintf("mini-batch 2 does not exist: manifest %q holds 2", filepath.Join(dir, ManifestName)))
	_, err = m.Batch(-1)
	require.Error(t, err)
	require.NoError(t, m.Close())

	path := filepath.Join(dir, ManifestName)
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path, data[:len(data)-1], 0o644))
	_, err = Open(dir)
	require.EqualError(t, err, fmt.Sprintf("mini-batch manifest %q is damaged (no porch manifest trailer): plan the step again", path))

	// A damaged batch line is reported when that batch is read.
	broken := strings.Replace(string(data), `"index":1`, `"index":7`, 1)
	require.NoError(t, os.WriteFile(path, []byte(broken), 0o644))
	m, err = Open(dir)
	require.NoError(t, err)
	defer m.Close()
	_, err = m.Batch(0)
	require.NoError(t, err)
	_, err = m.Batch(1)
	require.EqualError(t, err, fmt.Sprintf("mini-batch manifest %q is damaged at batch 1: plan the step again", path))
}

// plan100k writes a CSV of 100,000 rows and plans it with one row a batch.
func plan100k(t testing.TB, csvDir, dir string) Summary {
	t.Helper()
	sum, err := Plan(Input{Type: TypeMLTable, Path: csvDir, Size: "1"}, dir)
	require.NoError(t, err)
	return sum
}

func write100kCSV(t testing.TB) string {
	t.Helper()
	root := t.TempDir()
	var b strings.Builder
	b.WriteString("id,value\n")
	for i := range 100_000 {
		fmt.Fprintf(&b, "%d,v%d\n", i, i)
	}
	writeTree(t, root, map[string]string{"rows.csv": b.String()})
	return root
}

func Test100kBatches(t *testing.T) {
	root := write100kCSV(t)
	dir := t.TempDir()
	sum := plan100k(t, root, dir)
	require.Equal(t, 100_000, sum.Batches)
	require.Equal(t, int64(100_000), sum.Items)
	m, err := Open(dir)
	require.NoError(t, err)
	defer m.Close()
	require.Equal(t, 100_000, m.Len())
	for _, i := range []int{0, 1, 50_000, 99_999} {
		b, err := m.Batch(i)
		require.NoError(t, err)
		require.Equal(t, i, b.Index)
		require.Equal(t, 1, b.Items)
		rows := readPart(t, b.Table.Parts[0], ',', false)
		require.Equal(t, [][]string{{fmt.Sprint(i), fmt.Sprintf("v%d", i)}}, rows)
	}
}

func BenchmarkPlan100k(b *testing.B) {
	b.Run("csv-rows", func(b *testing.B) {
		root := write100kCSV(b)
		dir := b.TempDir()
		b.ResetTimer()
		for range b.N {
			plan100k(b, root, dir)
		}
	})
	b.Run("files", func(b *testing.B) {
		root := b.TempDir()
		for i := range 100_000 {
			sub := filepath.Join(root, fmt.Sprintf("d%03d", i/1000))
			if i%1000 == 0 {
				require.NoError(b, os.Mkdir(sub, 0o755))
			}
			require.NoError(b, os.WriteFile(filepath.Join(sub, fmt.Sprintf("f%05d.txt", i)), nil, 0o644))
		}
		dir := b.TempDir()
		b.ResetTimer()
		for range b.N {
			sum, err := Plan(Input{Type: TypeURIFolder, Path: root, Size: "1"}, dir)
			require.NoError(b, err)
			require.Equal(b, 100_000, sum.Batches)
		}
	})
	b.Run("partition-keys", func(b *testing.B) {
		root := write100kCSV(b)
		dir := b.TempDir()
		b.ResetTimer()
		for range b.N {
			sum, err := Plan(Input{Type: TypeMLTable, Path: root, PartitionKeys: []string{"id"}}, dir)
			require.NoError(b, err)
			require.Equal(b, 100_000, sum.Batches)
		}
	})
}

func BenchmarkBatch(b *testing.B) {
	root := write100kCSV(b)
	dir := b.TempDir()
	plan100k(b, root, dir)
	m, err := Open(dir)
	require.NoError(b, err)
	defer m.Close()
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		if _, err := m.Batch((i * 7919) % 100_000); err != nil {
			b.Fatal(err)
		}
	}
}
