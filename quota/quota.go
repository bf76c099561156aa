// Package quota is the arithmetic of core quotas: pools of cores an
// administrator sets per compute or per VM size, the claims steps make on
// them, and the first-come, first-served order in which claims are granted.
// The quota workflow (workflows.Quota) keeps a State durably; this package
// has no Temporal in it, so its rules are tested as plain functions.
package quota

import (
	"fmt"
	"slices"
	"time"
)

// Kind is what a pool's cores belong to.
type Kind string

// Pool kinds: Azure's quotas are per compute (cluster) and per VM family.
const (
	Compute Kind = "compute"
	Size    Kind = "size"
)

// Signal, update and query names of the quota workflow and its claimants.
const (
	AcquireSignal = "acquire"       // a Claim, sent to the quota workflow
	ReleaseSignal = "release"       // a claim id, sent to the quota workflow
	GrantedSignal = "quota-granted" // a Pool, sent to the claimant when granted
	SetUpdate     = "set"           // an int (cores), answered with the previous limit
	DeleteUpdate  = "delete"        // lifts the quota: waiting claims run, the workflow ends
	StatusQuery   = "status"        // answered with a State
)

// Pool is one quota: the cores of a compute or of a VM size.
type Pool struct {
	Kind Kind   `json:"kind"`
	Name string `json:"name"`
}

// WorkflowID is the id of the workflow that holds the pool's quota:
// porch-quota/compute/cpu-cluster, porch-quota/size/Standard_D4.
func (p Pool) WorkflowID() string { return "porch-quota/" + string(p.Kind) + "/" + p.Name }

// String names the pool as messages do: "compute cpu-cluster",
// "size Standard_D4".
func (p Pool) String() string { return string(p.Kind) + " " + p.Name }

// ParsePool reads a pool's kind and name as the CLI takes them.
func ParsePool(kind, name string) (Pool, error) {
	k := Kind(kind)
	if k != Compute && k != Size {
		return Pool{}, fmt.Errorf("quota kind %q: expected compute or size", kind)
	}
	if name == "" {
		return Pool{}, fmt.Errorf("a %s quota needs a name: the compute's name or the VM size (Standard_D4)", kind)
	}
	return Pool{Kind: k, Name: name}, nil
}

// Claim is one step's request for cores. ID is the claimant's workflow id,
// to which the grant is signalled; a claim is idempotent by ID.
type Claim struct {
	ID    string `json:"id"`
	Run   string `json:"run,omitempty"`
	Step  string `json:"step,omitempty"`
	Cores int    `json:"cores"`
	// At is when the quota workflow received the claim.
	At time.Time `json:"at"`
}

// State is a pool's quota: its limit in cores, the claims holding cores in
// the order they were granted, and the claims waiting in arrival order.
type State struct {
	Pool    Pool    `json:"pool"`
	Cores   int     `json:"cores"`
	Holders []Claim `json:"holders,omitempty"`
	Waiters []Claim `json:"waiters,omitempty"`
}

// InUse is the cores the holders hold.
func (s State) InUse() int {
	n := 0
	for _, c := range s.Holders {
		n += c.Cores
	}
	return n
}

// Add queues a claim. A claim whose id already holds or waits is not queued
// twice (a claimant's retried request), and Add says so.
func (s *State) Add(c Claim) bool {
	same := func(x Claim) bool { return x.ID == c.ID }
	if slices.ContainsFunc(s.Holders, same) || slices.ContainsFunc(s.Waiters, same) {
		return false
	}
	s.Waiters = append(s.Waiters, c)
	return true
}

// Release removes a claim, holding or waiting, and says whether it was
// there.
func (s *State) Release(id string) bool {
	same := func(x Claim) bool { return x.ID == id }
	n := len(s.Holders) + len(s.Waiters)
	s.Holders = slices.DeleteFunc(s.Holders, same)
	s.Waiters = slices.DeleteFunc(s.Waiters, same)
	return len(s.Holders)+len(s.Waiters) < n
}

// Grant moves waiting claims to the holders while the first in line fits
// in the cores left, and returns them. It is strictly first come, first
// served: a small claim never overtakes a larger one that arrived earlier,
// so a large job cannot starve behind a stream of small ones.
func (s *State) Grant() []Claim {
	var granted []Claim
	for len(s.Waiters) > 0 && s.InUse()+s.Waiters[0].Cores <= s.Cores {
		granted = append(granted, s.Waiters[0])
		s.Holders = append(s.Holders, s.Waiters[0])
		s.Waiters = s.Waiters[1:]
	}
	return granted
}

// Holds says whether a claim holds cores of the pool.
func (s State) Holds(id string) bool {
	return slices.ContainsFunc(s.Holders, func(x Claim) bool { return x.ID == id })
}

// Describe is the pool's status line, as porch run and porch job show print
// it for a waiting step: "12 of 16 cores of Standard_D4 in use by 3 jobs".
func (s State) Describe() string {
	jobs := "jobs"
	if len(s.Holders) == 1 {
		jobs = "job"
	}
	return fmt.Sprintf("%d of %d cores of %s in use by %d %s", s.InUse(), s.Cores, s.Pool.Name, len(s.Holders), jobs)
}

// Waiting describes a claim that waits: the pool's status and its place in
// line, or "" when the claim is not waiting.
func (s State) Waiting(id string) string {
	i := slices.IndexFunc(s.Waiters, func(x Claim) bool { return x.ID == id })
	if i < 0 {
		return ""
	}
	msg := "waiting for quota: " + s.Describe()
	if c := s.Waiters[i]; c.Cores > s.Cores {
		return msg + fmt.Sprintf("; this step needs %d cores, more than the quota: raise it with porch quota set", c.Cores)
	}
	if i > 0 {
		msg += fmt.Sprintf(", %d ahead in line", i)
	}
	return msg
}

// Check refuses a request that the pool could never grant: instances of
// perInstance cores each above the pool's limit. Its message is Azure's
// advice, with the instance count that would fit.
func Check(p Pool, limit, instances, perInstance int) error {
	need := instances * perInstance
	if limit <= 0 || need <= limit {
		return nil
	}
	fit := limit / perInstance
	lower := fmt.Sprintf("lower resources.instance_count to %d", fit)
	if fit == 0 {
		lower = fmt.Sprintf("one instance needs %d cores, so instance_count cannot help", perInstance)
	}
	return fmt.Errorf("the step needs %d cores (%d × %d) but the quota of %s is %d cores, so it could never run: "+
		"%s, choose another size, or ask your administrator for more quota (porch quota set %s %s --cores N)",
		need, instances, perInstance, p, limit, lower, p.Kind, p.Name)
}
