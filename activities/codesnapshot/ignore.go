package codesnapshot

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// ignoreFiles are the files, at a code folder's root, whose patterns leave
// paths out of its snapshot: the first that exists is used, as Azure ML
// uses .amlignore over .gitignore.
var ignoreFiles = []string{".amlignore", ".gitignore"}

// ignoreRule is one pattern of an ignore file.
type ignoreRule struct {
	segments []string // the pattern split at "/"; "**" matches any number of segments
	negate   bool     // "!pattern" includes again what an earlier rule left out
	dirOnly  bool     // "pattern/" matches folders only
}

// ignoreRules are an ignore file's rules, in file order: the last rule that
// matches a path decides.
type ignoreRules []ignoreRule

// readIgnore reads the ignore file at the folder's root, if any.
func readIgnore(root string) (ignoreRules, error) {
	for _, name := range ignoreFiles {
		f, err := os.Open(filepath.Join(root, name))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", filepath.Join(root, name), err)
		}
		defer f.Close()
		var rules ignoreRules
		sc := bufio.NewScanner(f)
		line := 0
		for sc.Scan() {
			line++
			r, ok, err := parseRule(sc.Text())
			if err != nil {
				return nil, fmt.Errorf("%s:%d: %v", filepath.Join(root, name), line, err)
			}
			if ok {
				rules = append(rules, r)
			}
		}
		if err := sc.Err(); err != nil {
			return nil, fmt.Errorf("read %s: %w", filepath.Join(root, name), err)
		}
		return rules, nil
	}
	return nil, nil
}

// parseRule parses one line of gitignore syntax: blank lines and "#"
// comments are skipped, "\#" and "\!" escape a leading "#" or "!",
// trailing spaces are dropped, "!" negates, a trailing "/" matches folders
// only, a "/" at the start or in the middle anchors the pattern at the
// root (otherwise it matches at any depth), "*", "?" and "[...]" match
// within one name, and "**" matches any number of folders.
func parseRule(line string) (ignoreRule, bool, error) {
	line = strings.TrimRight(line, " \t\r")
	if strings.HasSuffix(line, "\\") { // "\ " kept a trailing space
		line += " "
	}
	var r ignoreRule
	switch {
	case line == "" || strings.HasPrefix(line, "#"):
		return r, false, nil
	case strings.HasPrefix(line, "!"):
		r.negate, line = true, line[1:]
	case strings.HasPrefix(line, "\\#"), strings.HasPrefix(line, "\\!"):
		line = line[1:]
	}
	if strings.HasSuffix(line, "/") {
		r.dirOnly, line = true, strings.TrimRight(line, "/")
	}
	anchored := strings.Contains(line, "/")
	line = strings.TrimPrefix(line, "/")
	if line == "" {
		return r, false, nil
	}
	r.segments = strings.Split(line, "/")
	if !anchored {
		r.segments = append([]string{"**"}, r.segments...)
	}
	for _, seg := range r.segments {
		if _, err := path.Match(seg, ""); err != nil {
			return r, false, fmt.Errorf("pattern %q is malformed (%v): fix or remove it", line, err)
		}
	}
	return r, true, nil
}

// ignored says whether the path rel (slash-separated, relative to the
// folder's root) is left out. A folder left out takes everything under it
// along, as in git.
func (rs ignoreRules) ignored(rel string, dir bool) bool {
	out := false
	parts := strings.Split(rel, "/")
	for _, r := range rs {
		if r.dirOnly && !dir {
			continue
		}
		if matchSegments(r.segments, parts) {
			out = !r.negate
		}
	}
	return out
}

// matchSegments matches path segments against pattern segments, "**"
// standing for zero or more segments (one or more when it ends the
// pattern, so "a/**" is what is inside a, not a itself).
func matchSegments(pat, parts []string) bool {
	if len(pat) == 0 {
		return len(parts) == 0
	}
	if pat[0] == "**" {
		if len(pat) == 1 {
			return len(parts) > 0
		}
		for i := 0; i <= len(parts); i++ {
			if matchSegments(pat[1:], parts[i:]) {
				return true
			}
		}
		return false
	}
	if len(parts) == 0 {
		return false
	}
	ok, _ := path.Match(pat[0], parts[0])
	return ok && matchSegments(pat[1:], parts[1:])
}
