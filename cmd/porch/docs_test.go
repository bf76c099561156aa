package main

import (
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/porch-pipelines/porch/internal/doccheck"
	"github.com/rogpeppe/go-internal/testscript"
)

// TestDocExamples runs the examples of README.md and docs/*.md as written,
// against this porch: each page's blocks marked <!-- doctest: run --> in
// order, as one script, from a folder that holds a copy of samples/ as the
// repository's root does (see internal/doccheck for the markers). The
// scripts it runs are written to testdata/docs-scripts only when
// PORCH_DOCTEST_KEEP is set, to read them.
func TestDocExamples(t *testing.T) {
	root := filepath.Join("..", "..")
	dir := t.TempDir()
	if os.Getenv("PORCH_DOCTEST_KEEP") != "" {
		dir = filepath.Join("testdata", "docs-scripts")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	n := 0
	for _, page := range docPages(t, root) {
		src, err := os.ReadFile(filepath.Join(root, page))
		if err != nil {
			t.Fatal(err)
		}
		p, err := doccheck.Parse(page, src)
		if err != nil {
			t.Fatal(err)
		}
		script, err := doccheck.Script(p)
		if err != nil {
			t.Fatal(err)
		}
		if script == "" {
			continue
		}
		name := strings.TrimSuffix(strings.ReplaceAll(page, string(filepath.Separator), "_"), ".md") + ".txtar"
		if err := os.WriteFile(filepath.Join(dir, name), []byte(script), 0o644); err != nil {
			t.Fatal(err)
		}
		n++
	}
	if n == 0 {
		t.Fatal("no page has an example marked <!-- doctest: run -->")
	}
	samples, err := filepath.Abs(filepath.Join(root, "samples"))
	if err != nil {
		t.Fatal(err)
	}
	params := scriptParams(t, dir)
	setup := params.Setup
	params.Setup = func(env *testscript.Env) error {
		if err := setup(env); err != nil {
			return err
		}
		// The examples name samples/ from the repository's root.
		if err := os.CopyFS(filepath.Join(env.WorkDir, "samples"), os.DirFS(samples)); err != nil {
			return err
		}
		for _, v := range []string{"DOC_PORT", "DOC_UI_PORT"} {
			port, err := freePort()
			if err != nil {
				return err
			}
			env.Setenv(v, strconv.Itoa(port))
		}
		return nil
	}
	testscript.Run(t, params)
}

// docPages are README.md and the markdown files under docs/, by their
// paths from the repository's root.
func docPages(t *testing.T, root string) []string {
	pages := []string{"README.md"}
	err := filepath.WalkDir(filepath.Join(root, "docs"), func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".md") {
			rel, _ := filepath.Rel(root, p)
			pages = append(pages, rel)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return pages
}

// freePort is a TCP port of 127.0.0.1 that nothing listens on now.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
