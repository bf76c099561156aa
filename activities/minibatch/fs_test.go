package minibatch

import (
	"encoding/json"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestPlanOverAFileSystemMatchesTheLocalPlan plans the same files from a
// local folder and from an fs.FS (as a datastore serves them): the batches
// are the same but for the paths, which name the files by Base + name.
func TestPlanOverAFileSystemMatchesTheLocalPlan(t *testing.T) {
	files := map[string]string{
		"in/MLTable": `paths:
  - pattern: ./parts/**/*.csv
transformations:
  - read_delimited:
      header: from_first_file
  - extract_columns_from_partition_format: "parts/{Store}/{file_name}.csv"
`,
		"in/parts/s1/a.csv":  "store,v\n1,a\n1,b\n1,c\n",
		"in/parts/s2/b.csv":  "2,d\n2,e\n",
		"in/parts/.hid.csv":  "x\n",
		"in/docs/readme.txt": "not data",
	}
	root := t.TempDir()
	writeTree(t, root, files)
	mapFS := fstest.MapFS{}
	for name, body := range files {
		mapFS["lake/"+name] = &fstest.MapFile{Data: []byte(body)}
	}
	const base = "azureml://datastores/lake/paths/"
	for _, c := range []struct {
		name string
		in   Input
	}{
		{"uri_folder by count", Input{Type: TypeURIFolder, Path: "in", Size: "2"}},
		{"uri_folder by size", Input{Type: TypeURIFolder, Path: "in", Size: "1kb"}},
		{"uri_file", Input{Type: TypeURIFile, Path: "in/parts/s1/a.csv"}},
		{"mltable by size", Input{Type: TypeMLTable, Path: "in", Size: "8"}},
		{"mltable file", Input{Type: TypeMLTable, Path: "in/MLTable"}},
		{"mltable by key", Input{Type: TypeMLTable, Path: "in", PartitionKeys: []string{"Store"}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			local := c.in
			local.Path = root + "/" + c.in.Path
			remote := c.in
			remote.FS, remote.Base, remote.Path = mapFS, base, base+"lake/"+c.in.Path
			lsum, lbatches := planAll(t, local)
			rsum, rbatches := planAll(t, remote)
			require.NotZero(t, lsum.Batches)
			assert.Equal(t, lsum.Batches, rsum.Batches)
			assert.Equal(t, lsum.Items, rsum.Items)
			assert.Equal(t, lsum.Bytes, rsum.Bytes)
			want, err := json.Marshal(lbatches)
			require.NoError(t, err)
			got, err := json.Marshal(rbatches)
			require.NoError(t, err)
			assert.Equal(t, strings.ReplaceAll(string(want), root, strings.TrimSuffix(base, "/")+"/lake"), string(got))
		})
	}
}

// TestPlanOverAFileSystemNamesMissingInputsByURI checks a user's mistake on
// a datastore names the input by its URI.
func TestPlanOverAFileSystemNamesMissingInputsByURI(t *testing.T) {
	const base = "azureml://datastores/lake/paths/"
	ie := planErr(t, Input{Type: TypeURIFolder, Path: base + "nothing", FS: fstest.MapFS{"a": {}}, Base: base})
	assert.Equal(t, base+"nothing", ie.Path)
	assert.Contains(t, ie.Msg, "does not exist")
}
