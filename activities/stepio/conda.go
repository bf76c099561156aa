package stepio

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/porch-pipelines/porch/activities/condafile"
	"github.com/porch-pipelines/porch/activities/launch"
	"github.com/porch-pipelines/porch/activities/lifeline"
	"github.com/porch-pipelines/porch/compiler/plan"
)

// condaPrefix is where a derived image holds its conda environment.
const condaPrefix = "/opt/porch-env"

// condaFiles are the build context of a conda file's install: the file,
// its pip requirements and the install script, which runs in dir.
func condaFiles(env *plan.Environment, dir, prefix string, system bool) (map[string]string, error) {
	spec, err := condafile.Parse(env.Conda)
	if err != nil {
		return nil, Invalid("conda file %s: %v", env.CondaFile, err)
	}
	return map[string]string{
		"conda.yml":        env.Conda,
		"requirements.txt": spec.Requirements(),
		"install.sh":       condafile.InstallScript(spec, dir, prefix, system),
	}, nil
}

// condaImage derives img with the environment's conda file installed.
func (h *Host) condaImage(ctx context.Context, img launch.Image, env *plan.Environment, log io.Writer) (launch.Image, error) {
	files, err := condaFiles(env, "/tmp/porch-env", condaPrefix, true)
	if err != nil {
		return img, err
	}
	derived, err := h.Images().Derive(ctx, img, files, condaPrefix, log)
	if err != nil {
		return img, err
	}
	derived.Ref = img.Ref + " + conda file " + env.CondaFile + " (" + derived.Ref + ")"
	return derived, nil
}

// HostEnvironment installs a step's conda file on the host runtime, once
// per conda file and worker Python: under Home/envs/<hash>, with conda,
// mamba or micromamba when the worker has one, else for a pip-only file
// in a virtual environment of the worker's Python. It returns the
// environment's Python, which the step runs as python, python3 and pip.
// Its output goes to log; a failed install is the step's, never retried.
func (h *Host) HostEnvironment(ctx context.Context, env *plan.Environment, log io.Writer) (StepPython, error) {
	worker := h.Python()
	dir := filepath.Join(h.Home, "envs", condafile.Hash(env.Conda, worker.Exe))
	ready := filepath.Join(dir, ".porch-ready")
	py := StepPython{Exe: filepath.Join(dir, "bin", "python"), Bin: filepath.Join(dir, "bin"),
		Note: fmt.Sprintf("porch: python, python3 and pip are the conda file's environment %s", dir)}
	if _, err := os.Stat(ready); err == nil {
		return py, nil
	}
	unlock, err := lockFile(dir + ".lock")
	if err != nil {
		return py, err
	}
	defer unlock()
	if _, err := os.Stat(ready); err == nil {
		return py, nil
	}
	if err := os.RemoveAll(dir); err != nil {
		return py, err
	}
	src := dir + ".src"
	if err := os.MkdirAll(src, 0o755); err != nil {
		return py, err
	}
	defer os.RemoveAll(src)
	files, err := condaFiles(env, src, dir, false)
	if err != nil {
		return py, err
	}
	for n, c := range files {
		if err := os.WriteFile(filepath.Join(src, n), []byte(c), 0o644); err != nil {
			return py, err
		}
	}
	fmt.Fprintf(log, "porch: installing conda file %s into %s\n", env.CondaFile, dir)
	var out bytes.Buffer
	cmd := exec.Command("/bin/sh", filepath.Join(src, "install.sh"))
	cmd.Env = append(os.Environ(), "PORCH_PYTHON="+worker.Exe)
	cmd.Stdout, cmd.Stderr = io.MultiWriter(log, &out), io.MultiWriter(log, &out)
	// In a group tied to the worker: an install left running by a dead
	// worker would write into the folder the next one clears and fills.
	if err := lifeline.Run(ctx, cmd, h.StopGrace()); err != nil {
		_ = os.RemoveAll(dir)
		if ctx.Err() != nil {
			return py, ctx.Err()
		}
		return py, Invalid("installing conda file %s failed: %s", env.CondaFile, tail(out.String(), 5))
	}
	return py, os.WriteFile(ready, nil, 0o644)
}

// lockFile takes an exclusive lock on path, shared by the workers of one
// home.
func lockFile(path string) (func(), error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, err
	}
	return func() { _ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN); f.Close() }, nil
}

// tail is the last n non-empty lines of s, joined by "; ".
func tail(s string, n int) string {
	var lines []string
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, l)
		}
	}
	return strings.Join(lines[max(0, len(lines)-n):], "; ")
}
