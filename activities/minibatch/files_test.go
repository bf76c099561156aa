package minibatch

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestFolderDefaultSize(t *testing.T) {
	root := t.TempDir()
	files := map[string]string{}
	for i := range 25 {
		files[fmt.Sprintf("f%02d.txt", i)] = strings.Repeat("x", i)
	}
	writeTree(t, root, files)
	sum, batches := planAll(t, Input{Type: TypeURIFolder, Path: root})
	require.Equal(t, 3, sum.Batches)
	require.Equal(t, int64(25), sum.Items)
	require.Equal(t, 25, sum.Files)
	require.Equal(t, int64(24*25/2), sum.Bytes)
	require.False(t, sum.Tabular)
	require.Len(t, sum.Digest, 64)
	require.Equal(t, []int{10, 10, 5}, []int{batches[0].Items, batches[1].Items, batches[2].Items})
	require.Equal(t, filepath.Join(root, "f00.txt"), batches[0].Files[0])
	require.Equal(t, filepath.Join(root, "f24.txt"), batches[2].Files[4])
	require.Nil(t, batches[0].Table)
}

func TestFolderExplicitCount(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, map[string]string{"a": "1", "b": "2", "c": "3", "d": "4", "e": "5"})
	_, batches := planAll(t, Input{Type: TypeURIFolder, Path: root, Size: "2"})
	var got [][]string
	for _, b := range batches {
		var names []string
		for _, f := range b.Files {
			names = append(names, filepath.Base(f))
		}
		got = append(got, names)
		require.Equal(t, len(names), b.Items)
	}
	require.Equal(t, [][]string{{"a", "b"}, {"c", "d"}, {"e"}}, got)
}

func TestFolderByteSize(t *testing.T) {
	root := t.TempDir()
	kb := strings.Repeat("k", 1024)
	writeTree(t, root, map[string]string{
		"1": kb, "2": kb, "3": kb + kb + kb, // a file bigger than the size is a batch of its own
		"4": kb, "5": "", "6": kb,
	})
	_, batches := planAll(t, Input{Type: TypeURIFolder, Path: root, Size: "2KB"})
	var got []string
	for _, b := range batches {
		var names []string
		for _, f := range b.Files {
			names = append(names, filepath.Base(f))
		}
		got = append(got, strings.Join(names, ","))
	}
	require.Equal(t, []string{"1,2", "3", "4,5,6"}, got)
}

func TestFolderNestedOrder(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, map[string]string{
		"b/2.txt": "", "b/10.txt": "", "a.txt": "", "a/z/deep.txt": "", "a/b.txt": "",
		".hidden": "", "MLTable": "paths: []", "c/.x/y": "",
	})
	// A symbolic link to a folder is not followed; one to a file is a file.
	require.NoError(t, os.Symlink(filepath.Join(root, "b"), filepath.Join(root, "linkdir")))
	require.NoError(t, os.Symlink(filepath.Join(root, "a.txt"), filepath.Join(root, "link.txt")))
	_, batches := planAll(t, Input{Type: TypeURIFolder, Path: root, Size: "100"})
	require.Len(t, batches, 1)
	var rel []string
	for _, f := range batches[0].Files {
		require.True(t, filepath.IsAbs(f))
		r, err := filepath.Rel(root, f)
		require.NoError(t, err)
		rel = append(rel, filepath.ToSlash(r))
	}
	// Byte order of the relative path: "." (0x2e) sorts before "/" (0x2f).
	require.Equal(t, []string{".hidden", "MLTable", "a.txt", "a/b.txt", "a/z/deep.txt", "b/10.txt", "b/2.txt", "c/.x/y", "link.txt"}, rel)
}

func TestURIFile(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, map[string]string{"data.bin": "12345"})
	p := filepath.Join(root, "data.bin")
	sum, batches := planAll(t, Input{Type: TypeURIFile, Path: p, Size: "3"})
	require.Equal(t, Summary{Batches: 1, Items: 1, Files: 1, Bytes: 5, Digest: sum.Digest}, sum)
	require.Equal(t, []string{p}, batches[0].Files)
}

func TestFileInputErrors(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, map[string]string{"f.txt": "x", "empty/.keep/": ""})
	require.NoError(t, os.Remove(filepath.Join(root, "empty/.keep")))
	missing := filepath.Join(root, "missing")
	for _, tc := range []struct {
		name string
		in   Input
		want string
	}{
		{"unknown type", Input{Type: "uri_blob", Path: root},
			root + `: input type "uri_blob" cannot be split into mini-batches: declare the input as uri_folder, uri_file or mltable`},
		{"missing folder", Input{Type: TypeURIFolder, Path: missing},
			missing + ": the uri_folder input does not exist: check the input's path"},
		{"folder is a file", Input{Type: TypeURIFolder, Path: filepath.Join(root, "f.txt")},
			filepath.Join(root, "f.txt") + ": the uri_folder input is a file, not a folder: declare the input as uri_file, or give its folder"},
		{"empty folder", Input{Type: TypeURIFolder, Path: filepath.Join(root, "empty")},
			filepath.Join(root, "empty") + ": the uri_folder input holds no files: check that the step before wrote its output there"},
		{"missing file", Input{Type: TypeURIFile, Path: missing},
			missing + ": the uri_file input does not exist: check the input's path"},
		{"file is a folder", Input{Type: TypeURIFile, Path: root},
			root + ": the uri_file input is a folder: declare the input as uri_folder"},
		{"malformed size", Input{Type: TypeURIFolder, Path: root, Size: "ten"},
			`mini_batch_size "ten" is malformed: write a number of files (10) or a size (10kb, 1mb, 1gb)`},
		{"zero size", Input{Type: TypeURIFolder, Path: root, Size: "0"},
			`mini_batch_size "0" is zero: write at least 1 (files) or a size such as 1mb`},
		{"partition keys", Input{Type: TypeURIFolder, Path: root, PartitionKeys: []string{"a"}},
			root + ": partition_keys need tabular input: declare input_data as an mltable input, or remove partition_keys"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, planErr(t, tc.in).Error())
		})
	}
}
