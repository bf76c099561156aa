package fleet

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"time"

	"github.com/porch-pipelines/porch/activities/atomicfile"
)

// State is what a porch dev's fleet runs, kept in Home/fleet/state.json
// for `porch compute show`.
type State struct {
	Address   string         `json:"address"`
	Namespace string         `json:"namespace"`
	PID       int            `json:"pid"`
	Computes  []ComputeState `json:"computes"`
}

// ComputeState is one compute's nodes.
type ComputeState struct {
	Name string `json:"name"`
	Max  int    `json:"max_instances"`
	// Draining: the compute was deleted; its nodes stop as they go idle.
	Draining bool       `json:"draining,omitempty"`
	Nodes    []NodeInfo `json:"nodes"`
}

// NodeInfo is one node as the fleet last saw it.
type NodeInfo struct {
	Name      string    `json:"name"`
	PID       int       `json:"pid"`
	Busy      bool      `json:"busy"`
	IdleSince time.Time `json:"idle_since,omitzero"`
	Stopping  bool      `json:"stopping,omitempty"`
}

func statePath(home string) string { return filepath.Join(home, "fleet", "state.json") }

// ReadState reads the state of the fleet of the porch dev running with
// this home; ok is false when none runs.
func ReadState(home string) (st State, ok bool, err error) {
	data, err := os.ReadFile(statePath(home))
	if os.IsNotExist(err) {
		return st, false, nil
	}
	if err != nil {
		return st, false, err
	}
	if err := json.Unmarshal(data, &st); err != nil {
		return st, false, fmt.Errorf("%s: %v", statePath(home), err)
	}
	// A porch dev that was killed left its file behind.
	if st.PID <= 0 || syscall.Kill(st.PID, 0) != nil {
		return st, false, nil
	}
	return st, true, nil
}

// Compute finds a compute's nodes.
func (s State) Compute(name string) (ComputeState, bool) {
	i := slices.IndexFunc(s.Computes, func(c ComputeState) bool { return c.Name == name })
	if i < 0 {
		return ComputeState{}, false
	}
	return s.Computes[i], true
}

// writeState writes the fleet's state when it changed.
func (f *Fleet) writeState() {
	st := State{Address: f.opts.Address, Namespace: f.opts.Namespace, PID: os.Getpid(), Computes: []ComputeState{}}
	names := make([]string, 0, len(f.pools))
	for name := range f.pools {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		p := f.pools[name]
		cs := ComputeState{Name: name, Max: p.compute.MaxInstances, Draining: p.deleted, Nodes: []NodeInfo{}}
		for _, n := range p.nodes {
			ns, _ := n.state()
			cs.Nodes = append(cs.Nodes, NodeInfo{Name: n.name, PID: n.cmd.Process.Pid, Busy: ns.Busy,
				IdleSince: ns.IdleSince.UTC(), Stopping: !n.stopping.IsZero()})
		}
		st.Computes = append(st.Computes, cs)
	}
	data, err := json.MarshalIndent(st, "", "  ")
	if err != nil || bytes.Equal(data, f.lastState) {
		return
	}
	if atomicfile.Write(statePath(f.opts.Home), data) == nil {
		f.lastState = data
	}
}

func removeState(home string) { os.Remove(statePath(home)) }
