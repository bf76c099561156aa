package minibatch

import (
	"errors"
	"io/fs"
	"path"
	"strings"
)

// glob lists the regular files matching pattern, a name in src whose
// elements may hold path.Match wildcards (*, ?, [a-z]) and where an element
// "**" matches any number of folders, none included. Files come sorted by
// path; keep filters them by their path relative to the pattern's fixed
// leading folder.
func glob(src source, pattern string, keep func(rel string) bool) ([]file, error) {
	segs := strings.Split(pattern, "/")
	fixed := 0
	for fixed < len(segs) && !strings.ContainsAny(segs[fixed], "*?[\\") {
		fixed++
	}
	rest := segs[fixed:]
	for _, s := range rest {
		if _, err := path.Match(s, ""); err != nil {
			return nil, err
		}
	}
	base := strings.Join(segs[:fixed], "/")
	if base == "" {
		base = "."
	}
	if len(rest) == 0 { // no wildcard: the pattern names one file
		info, err := fs.Stat(src.fsys, base)
		if err != nil || !info.Mode().IsRegular() {
			return nil, nil
		}
		return []file{{path: src.path(base), name: base, rel: path.Base(base), size: info.Size()}}, nil
	}
	if info, err := fs.Stat(src.fsys, base); err != nil || !info.IsDir() {
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
		return nil, nil
	}
	return listFolder(src, base, func(rel string) bool {
		return matchSegments(rest, strings.Split(rel, "/")) && (keep == nil || keep(rel))
	})
}

// matchSegments matches path elements against pattern elements, "**"
// standing for zero or more elements.
func matchSegments(pat, name []string) bool {
	for len(pat) > 0 {
		if pat[0] == "**" {
			for len(pat) > 1 && pat[1] == "**" {
				pat = pat[1:]
			}
			for i := 0; i <= len(name); i++ {
				if matchSegments(pat[1:], name[i:]) {
					return true
				}
			}
			return false
		}
		if len(name) == 0 {
			return false
		}
		if ok, _ := path.Match(pat[0], name[0]); !ok {
			return false
		}
		pat, name = pat[1:], name[1:]
	}
	return len(name) == 0
}
