package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/porch-pipelines/porch/compiler"
	"github.com/porch-pipelines/porch/compiler/plan"
	"github.com/stretchr/testify/require"
)

func TestLocalDatastoreFolderMustExistUnlessCreated(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, path string) string {
		file := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(file, fmt.Appendf(nil, "name: store\ntype: local\npath: %s\n", path), 0o644))
		return file
	}
	missing := filepath.Join(dir, "store", "nested")
	file := write("missing.yml", missing)

	_, _, err := parseDatastoreFile(testFiles(t), file, false)
	require.EqualError(t, err, file+`:3: path "`+missing+`" does not exist: create the folder `+
		`(at this path on every worker), or add --create-path to have porch create it here`)
	require.NoDirExists(t, missing, "refusing creates nothing")

	d, warnings, err := parseDatastoreFile(testFiles(t), file, true)
	require.NoError(t, err)
	require.Equal(t, missing, d.Path)
	require.DirExists(t, missing)
	require.Equal(t, []string{file + `:3: created the folder "` + missing + `" (--create-path)`}, warnings)

	// Now it exists: no flag needed, nothing said.
	_, warnings, err = parseDatastoreFile(testFiles(t), file, false)
	require.NoError(t, err)
	require.Empty(t, warnings)

	notDir := filepath.Join(dir, "plain")
	require.NoError(t, os.WriteFile(notDir, nil, 0o644))
	for _, create := range []bool{false, true} {
		_, _, err = parseDatastoreFile(testFiles(t), write("file.yml", notDir), create)
		require.EqualError(t, err, filepath.Join(dir, "file.yml")+`:3: path "`+notDir+`" is a file: give the datastore's folder`)
	}
}

// testFiles reads files as the CLI does, within the default limits.
func testFiles(t *testing.T) userFiles {
	return userFiles{ctx: t.Context(), limits: compiler.DefaultLimits}
}

// TestAssetFlagsReplaceFileKeys reads a model from its file and flags, as
// az ml model create does: a flag replaces its key, and a relative path is
// relative to the file when the file gives it, to the working folder when
// --path does.
func TestAssetFlagsReplaceFileKeys(t *testing.T) {
	dir := t.TempDir()
	for _, d := range []string{"sub/model", "model"} {
		require.NoError(t, os.MkdirAll(filepath.Join(dir, d), 0o755))
	}
	file := filepath.Join(dir, "sub", "model.yml")
	require.NoError(t, os.WriteFile(file, []byte("name: clf\nversion: 1\npath: ./model\ndescription: from the file\n"), 0o644))
	t.Chdir(dir)

	m, _, err := parseAsset(testFiles(t), models, assetFlags{file: file})
	require.NoError(t, err)
	require.Equal(t, plan.Asset{Name: "clf", Version: "1", Type: "custom_model", Path: filepath.Join(dir, "sub", "model"),
		Description: "from the file"}, m)

	m, _, err = parseAsset(testFiles(t), models, assetFlags{file: file, version: "5", path: "model", typ: "triton_model"})
	require.NoError(t, err)
	require.Equal(t, plan.Asset{Name: "clf", Version: "5", Type: "triton_model", Path: filepath.Join(dir, "model"),
		Description: "from the file"}, m)

	_, _, err = parseAsset(testFiles(t), dataAssets, assetFlags{file: file, typ: "custom_model"})
	require.EqualError(t, err, `type "custom_model": a data asset is one of uri_file, uri_folder, mltable`)
	_, _, err = parseAsset(testFiles(t), models, assetFlags{name: "clf", path: "nope"})
	require.EqualError(t, err, `path "nope": no such file or directory: give an existing file or folder (relative paths are relative to the working folder)`)
}

// TestCatalogFileSyntaxAndSize: a catalogue file's syntax error names its
// line and column, on the first line too, and a file of more YAML nodes
// than PORCH_MAX_YAML_NODES is refused before it is decoded.
func TestCatalogFileSyntaxAndSize(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := filepath.Join(dir, "data.yml")
	require.NoError(t, os.WriteFile(file, []byte("name: a: b\ntype: uri_folder\n"), 0o644))
	_, err := readCatalogFile(testFiles(t), file)
	require.EqualError(t, err, file+":1:8: error: yaml syntax error: mapping values are not allowed in this context\n"+
		"\ta second \": \" in a plain value starts another key: quote the value (\"a: b\"), or put the key on its own line")

	require.NoError(t, os.WriteFile(file, []byte("name: a\ntype: uri_folder\ntags: {a: 1, b: 2, c: 3}\n"), 0o644))
	files := testFiles(t)
	files.limits.MaxYAMLNodes = 10
	_, err = readCatalogFile(files, file)
	require.ErrorContains(t, err, file+`:3:14: error: "`+file+`" holds more than 10 YAML nodes`)
}
