package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"time"
)

// devState is what a running `porch dev` leaves in $PORCH_HOME/dev.json so
// that other porch commands find it without --address.
type devState struct {
	// Address is where this machine reaches the server without TLS.
	Address string `json:"address"`
	// TLSAddress is the frontend's address when it serves TLS.
	TLSAddress string `json:"tls_address,omitempty"`
	Namespace  string `json:"namespace"`
	UI         string `json:"ui,omitempty"`
	PID        int    `json:"pid"`
	// Python is the PORCH_PYTHON porch dev's worker started with, ""
	// for none (python3 on its PATH).
	Python string `json:"python,omitempty"`
}

func devStatePath(home string) string { return filepath.Join(home, "dev.json") }

// writeDevState records a running dev server; the returned func removes the
// record if it is still this process's.
func writeDevState(home string, st devState) (func(), error) {
	data, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return nil, err
	}
	path := devStatePath(home)
	// Readable by its user only, as the database: it says where to reach a
	// server that runs commands as that user. Chmod tightens a file an
	// earlier porch wrote 0644.
	if err := os.WriteFile(path, append(data, '\n'), 0o600); err != nil {
		return nil, fmt.Errorf("record the dev server in %s: %v", path, err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		return nil, fmt.Errorf("record the dev server in %s: make it readable by you only: %v", path, err)
	}
	return func() {
		if cur, ok := loadDevState(home); ok && cur.PID == st.PID {
			os.Remove(path)
		}
	}, nil
}

func loadDevState(home string) (devState, bool) {
	var st devState
	data, err := os.ReadFile(devStatePath(home))
	if err != nil || json.Unmarshal(data, &st) != nil || st.Address == "" {
		return devState{}, false
	}
	return st, true
}

// runningDev returns the dev server recorded in home when it answers.
func runningDev(home string) (devState, bool) {
	st, ok := loadDevState(home)
	if !ok {
		return st, false
	}
	conn, err := net.DialTimeout("tcp", st.Address, 500*time.Millisecond)
	if err != nil {
		return st, false
	}
	conn.Close()
	return st, true
}

// errNoServer says a command needs a server and none is known.
var errNoServer = errors.New("no temporal server configured and no `porch dev` running")

// serverSettings resolves the server for commands that need one: the flags,
// TEMPORAL_ADDRESS, config.yaml, else a running `porch dev`.
func (a *app) serverSettings(flags serverFlags) (settings, error) {
	s, err := resolveSettings(a.getenv, flags)
	if err != nil || s.Address != "" {
		return s, err
	}
	st, ok := runningDev(s.Home)
	if !ok {
		return s, fmt.Errorf("%w: start one with `porch dev`, or give its address with --address, "+
			"%s, a profile of Temporal's client config (--profile), or address: in %s", errNoServer, envAddress,
			filepath.Join(s.Home, "config.yaml"))
	}
	namespaceGiven := s.from.of(setNamespace) != ""
	s = s.local(st.Address, "porch dev ("+devStatePath(s.Home)+")")
	if !namespaceGiven && st.Namespace != "" {
		s.Namespace = st.Namespace
	}
	return s, nil
}

// isDevServer says whether s is the server of the porch dev recorded in
// its home: one whose worker runs the steps of unregistered computes.
func isDevServer(s settings) bool {
	st, ok := loadDevState(s.Home)
	return ok && st.serves(s.Address)
}

// serves says whether addr is one of the dev server's addresses.
func (st devState) serves(addr string) bool {
	return addr == st.Address || st.TLSAddress != "" && addr == st.TLSAddress
}

// envPython is the variable that names the Python interpreter hosting
// parallel steps' entry scripts (and asked for mlflow) on a worker.
const envPython = "PORCH_PYTHON"

// checkDevPython warns when this command's PORCH_PYTHON is not the one
// porch dev's worker started with: the worker's environment is porch
// dev's, and a run submitted to it does not carry this one.
func (a *app) checkDevPython(s settings) {
	mine := a.getenv(envPython)
	st, ok := loadDevState(s.Home)
	if mine == "" || !ok || !st.serves(s.Address) || st.Python == mine {
		return
	}
	theirs := "python3 on its PATH (no PORCH_PYTHON)"
	if st.Python != "" {
		theirs = "PORCH_PYTHON=" + st.Python
	}
	fmt.Fprintf(a.stderr, "porch: warning: %s=%s does not reach porch dev's worker, whose steps run python, python3 and entry scripts with %s: "+
		"restart porch dev with %s=%s in its environment\n", envPython, mine, theirs, envPython, mine)
}
