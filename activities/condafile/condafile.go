// Package condafile reads a conda environment file (name:, channels:,
// dependencies: with an optional pip: list) as far as porch needs to
// install it: whether it needs conda, or only pip.
package condafile

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"regexp"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Spec is what a conda file asks for.
type Spec struct {
	// Conda are the conda packages, as written ("python=3.8", "pip").
	Conda []string
	// Pip are the pip requirements, as written.
	Pip []string
	// Python is the Python version asked for ("3.8"), "" for any.
	Python string
}

// file is the part of a conda file porch reads.
type file struct {
	Dependencies []any `yaml:"dependencies"`
}

// Parse reads a conda file's content.
func Parse(content string) (Spec, error) {
	var f file
	if err := yaml.Unmarshal([]byte(content), &f); err != nil {
		return Spec{}, fmt.Errorf("the conda file is not YAML: %v", err)
	}
	var s Spec
	for _, d := range f.Dependencies {
		switch d := d.(type) {
		case string:
			s.Conda = append(s.Conda, strings.TrimSpace(d))
		case map[string]any:
			pip, ok := d["pip"].([]any)
			if !ok {
				return Spec{}, fmt.Errorf("the conda file's dependencies hold a mapping other than pip: [...]")
			}
			for _, p := range pip {
				s.Pip = append(s.Pip, fmt.Sprint(p))
			}
		default:
			return Spec{}, fmt.Errorf("the conda file's dependency %v is neither a package nor pip: [...]", d)
		}
	}
	for _, c := range s.Conda {
		if name, version := split(c); name == "python" {
			s.Python = version
		}
	}
	return s, nil
}

var specRE = regexp.MustCompile(`^([A-Za-z0-9_.\-]+)\s*(?:[=<>!~]=?\s*([^\s,]*))?`)

// split is a conda package spec's name and version ("python=3.8" is
// python, 3.8).
func split(spec string) (string, string) {
	if i := strings.LastIndex(spec, "::"); i >= 0 {
		spec = spec[i+2:]
	}
	m := specRE.FindStringSubmatch(spec)
	if m == nil {
		return spec, ""
	}
	return strings.ToLower(m[1]), strings.TrimLeft(m[2], "=")
}

// PipOnly says whether pip alone installs the file: its conda packages
// are no more than python and pip, which the environment's own Python
// stands for.
func (s Spec) PipOnly() bool {
	for _, c := range s.Conda {
		if name, _ := split(c); name != "python" && name != "pip" {
			return false
		}
	}
	return true
}

// CondaOnly are the conda packages pip cannot stand for.
func (s Spec) CondaOnly() []string {
	var out []string
	for _, c := range s.Conda {
		if name, _ := split(c); name != "python" && name != "pip" {
			out = append(out, c)
		}
	}
	return out
}

// Requirements is the pip requirements file of the conda file's pip list.
func (s Spec) Requirements() string {
	if len(s.Pip) == 0 {
		return ""
	}
	return strings.Join(s.Pip, "\n") + "\n"
}

// Hash names an environment: the hash of what it is made from.
func Hash(parts ...string) string {
	h := sha256.New()
	for _, p := range parts {
		fmt.Fprintf(h, "%d\x00%s", len(p), p)
	}
	return hex.EncodeToString(h.Sum(nil))[:20]
}

// InstallScript is the shell script that installs the conda file
// (conda.yml) and its pip requirements (requirements.txt), both in dir,
// into the environment at prefix: with conda, mamba or micromamba when
// the machine has one, else, for a pip-only file, into a virtual
// environment of $PORCH_PYTHON, else of the machine's python3 (seeing its
// packages), with pip.
// It prints what it does; it fails with the package manager's error.
// On a host (system false) the install never touches the machine's own
// Python: without venv it fails.
func InstallScript(s Spec, dir, prefix string, system bool) string {
	var b strings.Builder
	fmt.Fprintf(&b, "set -e\ncd %q\nmgr=\nfor c in micromamba mamba conda; do if command -v $c >/dev/null 2>&1; then mgr=$c; break; fi; done\n", dir)
	fmt.Fprintf(&b, `if [ -n "$mgr" ]; then
  echo "porch: installing the conda file with $mgr into %[1]s"
  if [ "$mgr" = micromamba ]; then micromamba create --yes --prefix %[1]q --file conda.yml; else "$mgr" env create --prefix %[1]q --file conda.yml; fi
  exit 0
fi
`, prefix)
	if !s.PipOnly() {
		fmt.Fprintf(&b, "echo \"porch: the conda file needs conda packages (%s) but there is no conda, mamba or micromamba here: use an image with conda, list the packages under pip:, or install conda on the worker\" >&2\nexit 3\n",
			strings.ReplaceAll(strings.Join(s.CondaOnly(), ", "), `"`, `'`))
		return b.String()
	}
	fmt.Fprintf(&b, `py=${PORCH_PYTHON:-$(command -v python3 || command -v python)} || { echo "porch: there is no conda, mamba, micromamba or python here to install the conda file with" >&2; exit 3; }
echo "porch: no conda here: the conda file asks only for python%[2]s and pip packages; installing them with pip for $("$py" --version 2>&1)"
if "$py" -m venv --system-site-packages %[1]q; then py=%[1]q/bin/python; else %[3]s; fi
`, prefix, versionNote(s.Python), noVenv(system))
	if len(s.Pip) > 0 {
		b.WriteString(`"$py" -m pip install --no-cache-dir --disable-pip-version-check --requirement requirements.txt` + "\n")
	}
	return b.String()
}

// noVenv is what the script does when Python has no venv module.
func noVenv(system bool) string {
	if system {
		return `echo "porch: no venv module: installing into $py's own packages"; export PIP_BREAK_SYSTEM_PACKAGES=1`
	}
	return `echo "porch: $py has no venv module (Debian: apt-get install python3-venv): the conda file is not installed into the worker's own Python" >&2; exit 3`
}

func versionNote(v string) string {
	if v == "" {
		return ""
	}
	return " " + v + " (the Python here stands for it)"
}
