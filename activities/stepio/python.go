package stepio

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// StepPython is the one Python every step of a worker runs: a command's
// `python` and `python3`, entry scripts, sweep trials, and the mlflow
// probe.
type StepPython struct {
	// Exe is the interpreter python3 runs: the worker's configured
	// Python, else python3 on the worker's PATH ("python3" when there is
	// none, so starting it fails with the usual error).
	Exe string
	// Bin is the folder put first on every step's PATH, whose python and
	// python3 run Exe (python runs the PATH's own python when the worker
	// has no configured Python and the PATH has one); "" when it could
	// not be made.
	Bin string
	// Note says which Python the step has, for its log.
	Note string
}

// pythonProbeTimeout bounds asking the interpreter its version.
const pythonProbeTimeout = 10 * time.Second

// stepPython is resolved once per worker.
type stepPython struct {
	once sync.Once
	StepPython
}

// Python is the worker's StepPython, resolved and its bin folder made the
// first time a step asks.
func (h *Host) Python() StepPython {
	h.python.once.Do(func() { h.python.StepPython = resolvePython(h.Interpreter, h.Home) })
	return h.python.StepPython
}

// pythonBin is the folder of launchers running python3 as exe and python
// as python: Home/python/<hash of the two>/bin. Named by what it runs,
// not by the worker, so the workers of one home share it and a worker
// started again (porch run starts one each time) adds nothing.
func pythonBin(home, exe, python string) string {
	if home == "" {
		return ""
	}
	sum := sha256.Sum256([]byte(exe + "\x00" + python))
	return filepath.Join(home, "python", hex.EncodeToString(sum[:6]), "bin")
}

// resolvePython applies the rule: the configured Python is python and
// python3; without one, python3 is the PATH's and python the PATH's python
// if there is one, else python3 too (as Azure's images have it).
func resolvePython(configured, home string) StepPython {
	name := configured
	if name == "" {
		name = "python3"
	}
	exe, err := exec.LookPath(name)
	if err != nil {
		what := "no python3 on the worker's PATH"
		if configured != "" {
			what = fmt.Sprintf("the worker's Python %q cannot be run", configured)
		}
		return StepPython{Exe: name, Note: fmt.Sprintf("porch: %s (%v): `python` and `python3` are what the step's PATH finds", what, err)}
	}
	if abs, err := filepath.Abs(exe); err == nil {
		exe = abs
	}
	python := exe
	if configured == "" {
		if p, err := exec.LookPath("python"); err == nil {
			python, _ = filepath.Abs(p)
		}
	}
	bin := pythonBin(home, exe, python)
	sp := StepPython{Exe: exe, Bin: bin}
	if bin == "" {
		// No home to make launchers in (tests that run no step).
		err = errors.New("the worker has no home folder")
	} else {
		err = writeLauncher(bin, "python3", exe)
	}
	if err == nil {
		err = writeLauncher(bin, "python", python)
	}
	for _, pip := range []string{"pip", "pip3"} {
		// pip is the step's own Python's, not whichever is on PATH: `pip
		// install x && python ...` installs where python looks.
		if err == nil {
			err = writeScript(bin, pip, "#!/bin/sh\nexec '"+strings.ReplaceAll(exe, "'", `'\''`)+"' -m pip \"$@\"\n")
		}
	}
	if err != nil {
		sp.Bin = ""
		sp.Note = fmt.Sprintf("porch: cannot make the folder of the worker's python and python3 (%v): they are what the step's PATH finds", err)
		return sp
	}
	from := "the worker's configured Python (porch worker --python, PORCH_PYTHON)"
	if configured == "" {
		from = "python3 on the worker's PATH"
	}
	sp.Note = fmt.Sprintf("porch: python3 is %s (%s), %s", exe, pythonVersion(exe), from)
	if python != exe {
		sp.Note += fmt.Sprintf("; python is %s (%s)", python, pythonVersion(python))
	} else {
		sp.Note = strings.Replace(sp.Note, "python3 is", "python and python3 are", 1)
	}
	return sp
}

// writeLauncher writes bin/name, a script that runs exe. A script rather
// than a symlink: a virtualenv's interpreter finds its environment from
// the path it is started by, which a symlink elsewhere would change.
func writeLauncher(bin, name, exe string) error {
	return writeScript(bin, name, "#!/bin/sh\nexec '"+strings.ReplaceAll(exe, "'", `'\''`)+"' \"$@\"\n")
}

// writeScript writes bin/name, an executable script.
func writeScript(bin, name, script string) error {
	if err := os.MkdirAll(bin, 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(bin, "."+name+"-*")
	if err != nil {
		return err
	}
	_, werr := tmp.WriteString(script)
	cerr := tmp.Close()
	if err := firstErr(werr, cerr, os.Chmod(tmp.Name(), 0o755)); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	// A rename replaces the launcher another worker of this home may be
	// writing at the same time, atomically, with the same content.
	if err := os.Rename(tmp.Name(), filepath.Join(bin, name)); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return nil
}

func firstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// pythonVersion is what exe --version says ("Python 3.11.2"), or why it
// cannot say.
func pythonVersion(exe string) string {
	ctx, cancel := context.WithTimeout(context.Background(), pythonProbeTimeout)
	defer cancel()
	out, err := exec.CommandContext(ctx, exe, "--version").CombinedOutput()
	if err != nil {
		return fmt.Sprintf("its version unknown: %v", err)
	}
	return strings.TrimSpace(string(out))
}

// WithPython puts the worker's bin folder first on env's PATH, so a step's
// python and python3 are the worker's Python.
func (p StepPython) WithPython(env []string) []string {
	if p.Bin == "" {
		return env
	}
	out := make([]string, 0, len(env)+1)
	path := ""
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			path = v
			continue
		}
		out = append(out, kv)
	}
	if path == "" {
		return append(out, "PATH="+p.Bin)
	}
	return append(out, "PATH="+p.Bin+string(os.PathListSeparator)+path)
}
