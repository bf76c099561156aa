// Package docs_test checks porch's documentation as a reader meets it: every
// relative link and anchor resolves, every page is reachable from the
// README, and every block of porch or temporal commands says whether the
// examples test (cmd/porch TestDocExamples) runs it.
package docs_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/porch-pipelines/porch/internal/doccheck"
	"github.com/stretchr/testify/require"
)

// pages reads README.md, deploy/README.md and every markdown file under
// docs/, by their paths from the repository's root.
func pages(t *testing.T) map[string]*doccheck.Page {
	t.Helper()
	root := filepath.Join("..")
	paths := []string{"README.md", filepath.Join("deploy", "README.md")}
	err := filepath.WalkDir(filepath.Join(root, "docs"), func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".md") {
			rel, _ := filepath.Rel(root, p)
			paths = append(paths, rel)
		}
		return err
	})
	require.NoError(t, err)
	out := map[string]*doccheck.Page{}
	for _, p := range paths {
		src, err := os.ReadFile(filepath.Join(root, p))
		require.NoError(t, err)
		page, err := doccheck.Parse(p, src)
		require.NoError(t, err)
		out[p] = page
	}
	return out
}

func sortedKeys(m map[string]*doccheck.Page) []string {
	var keys []string
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// TestLinks checks that every relative link of the documentation names a
// file of the repository, and every #anchor a heading of its page.
func TestLinks(t *testing.T) {
	all := pages(t)
	var broken []string
	for _, name := range sortedKeys(all) {
		page := all[name]
		for _, l := range page.Links {
			if problem := checkLink(all, name, l.Dest); problem != "" {
				broken = append(broken, name+":"+strconv.Itoa(l.Line)+": "+l.Dest+": "+problem)
			}
		}
	}
	require.Empty(t, broken, "broken links:\n%s", strings.Join(broken, "\n"))
}

// checkLink says what is wrong with a link from page, or "".
func checkLink(all map[string]*doccheck.Page, page, dest string) string {
	if dest == "" {
		return "empty link"
	}
	if i := strings.Index(dest, ":"); i > 0 && !strings.ContainsAny(dest[:i], "/#.") {
		return "" // http:, https:, mailto:
	}
	file, anchor, _ := strings.Cut(dest, "#")
	target := page
	if file != "" {
		target = filepath.Clean(filepath.Join(filepath.Dir(page), file))
		if strings.HasPrefix(target, "..") {
			return "leads out of the repository"
		}
		if _, err := os.Stat(filepath.Join("..", target)); err != nil {
			return "no such file"
		}
	}
	if anchor == "" {
		return ""
	}
	p, ok := all[target]
	if !ok {
		if strings.HasSuffix(target, ".md") {
			return "a page the check does not read"
		}
		return "" // a line of a source file, as GitHub numbers them
	}
	if !p.Anchors[anchor] {
		return "no heading of " + target + " makes this anchor"
	}
	return ""
}

// TestEveryPageLinkedFromREADME checks that a reader who starts at the
// README can reach every page of docs/ in one click.
func TestEveryPageLinkedFromREADME(t *testing.T) {
	all := pages(t)
	linked := map[string]bool{}
	for _, l := range all["README.md"].Links {
		file, _, _ := strings.Cut(l.Dest, "#")
		linked[filepath.Clean(file)] = true
	}
	var missing []string
	for _, name := range sortedKeys(all) {
		if strings.HasPrefix(name, "docs"+string(filepath.Separator)) && !linked[name] {
			missing = append(missing, name)
		}
	}
	require.Empty(t, missing, "pages the README does not link (add them to its \"Where to go next\"):\n%s", strings.Join(missing, "\n"))
}

// TestCommandBlocksMarked checks that every code block holding a porch or
// temporal command is marked, so that a command the examples test does
// not run is left out on purpose, with a reason, never by oversight.
func TestCommandBlocksMarked(t *testing.T) {
	all := pages(t)
	// deploy/README.md is the operators' recipe for compose, Kubernetes and
	// a cluster, none of which the examples test can start: go test ./deploy
	// and deploy/cluster check those files and the cluster instead.
	delete(all, filepath.Join("deploy", "README.md"))
	var unmarked []string
	for _, name := range sortedKeys(all) {
		for _, b := range all[name].Blocks {
			if !b.Marked && doccheck.RunsCommands(b.Text) {
				first, _, _ := strings.Cut(strings.TrimSpace(b.Text), "\n")
				unmarked = append(unmarked, name+":"+strconv.Itoa(b.Line)+": "+first)
			}
		}
	}
	require.Empty(t, unmarked, "blocks of commands with no doctest marker before them: add <!-- doctest: run --> "+
		"(cmd/porch TestDocExamples runs them) or <!-- doctest: skip REASON -->:\n%s", strings.Join(unmarked, "\n"))
}
