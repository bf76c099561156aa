// Package testpython finds the Python interpreter that tests run entry
// scripts and trials with.
package testpython

import (
	"os"
	"os/exec"
	"testing"
)

// Interpreter is $PORCH_PYTHON, else Debian's /usr/bin/python3 (which has
// the distribution's pandas and sklearn), else python3 on PATH. It skips
// the test when there is none.
func Interpreter(t testing.TB) string {
	t.Helper()
	for _, p := range []string{os.Getenv("PORCH_PYTHON"), "/usr/bin/python3", "python3"} {
		if p == "" {
			continue
		}
		if _, err := exec.LookPath(p); err == nil {
			return p
		}
	}
	t.Skip("no Python interpreter: set PORCH_PYTHON or install python3")
	return ""
}
