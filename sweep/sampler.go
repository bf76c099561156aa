package sweep

import (
	"fmt"
	"math/rand/v2"

	"github.com/porch-pipelines/porch/compiler/plan"
)

// Observation is a finished (or reporting) trial, for bayesian sampling:
// the parameters it ran with and its primary metric.
type Observation struct {
	Params Assignment `json:"params"`
	Metric float64    `json:"metric"`
}

// Sampler proposes trials.
type Sampler interface {
	// Next returns up to n new assignments given the trials observed so far
	// (completed ones with their final primary metric), and whether the space
	// has more to propose after them (false only for an exhausted grid).
	// The same sampler state and inputs give the same outputs.
	Next(n int, observed []Observation) ([]Assignment, bool)
}

// NewSampler returns the sampler for a sweep. seed seeds every random draw
// (plan.Sampling.Seed, or the seed the sweep drew and recorded); goal is
// maximize or minimize (bayesian ranks observations by it); started is how
// many trials were already proposed, so that a sweep continued as new picks
// up the same sequence: grid skips that many, random, sobol and bayesian
// number their draws from there.
func NewSampler(space []plan.Parameter, s plan.Sampling, goal string, seed int64, started int) (Sampler, error) {
	if err := Validate(space, s); err != nil {
		return nil, err
	}
	if started < 0 {
		return nil, fmt.Errorf("started is %d: it counts the trials already proposed, so it cannot be negative", started)
	}
	base, _ := parseLogbase(s.Logbase) // Validate checked it
	sp := newSpace(space, base)
	switch s.Algorithm {
	case plan.SamplingGrid:
		return newGrid(sp, started), nil
	case plan.SamplingBayesian:
		if goal != plan.GoalMaximize && goal != plan.GoalMinimize {
			return nil, fmt.Errorf("unknown goal %q: use maximize or minimize", goal)
		}
		return &bayesian{space: sp, seed: seed, next: started, maximize: goal == plan.GoalMaximize}, nil
	}
	r := &random{space: sp, seed: seed, next: started}
	if s.Rule == "sobol" {
		r.sobol = newSobol(sp.ndims, seed)
	}
	return r, nil
}

// trialRNG is the random source of trial number t: a PCG stream keyed by the
// seed and the trial's number, so a trial's draws do not depend on how many
// numbers earlier trials consumed, nor on how proposals were batched.
func trialRNG(seed int64, t int) *rand.Rand {
	return rand.New(rand.NewPCG(splitmix(uint64(seed)), splitmix(uint64(t)^0x5eed5eed5eed5eed)))
}

// splitmix is SplitMix64's finaliser: it spreads nearby integers (seeds 1,
// 2, 3; trials 0, 1, 2) over unrelated 64-bit states.
func splitmix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// random is the random algorithm: independent draws (rule random) or a
// Sobol sequence (rule sobol).
type random struct {
	space *space
	seed  int64
	next  int
	sobol *sobol
}

// Next implements Sampler; random sampling never runs out.
func (r *random) Next(n int, _ []Observation) ([]Assignment, bool) {
	out := make([]Assignment, 0, max(n, 0))
	for range n {
		out = append(out, r.space.assign(r.point(r.next)))
		r.next++
	}
	return out, true
}

// point is trial t's coordinates. All dimensions are drawn, active or not,
// so that one branch's draws never shift another's.
func (r *random) point(t int) []float64 {
	rng := trialRNG(r.seed, t)
	x := make([]float64, r.space.ndims)
	for _, p := range r.space.allParams() {
		u := rng.Float64()
		if r.sobol != nil && p.dim < r.sobol.dims() {
			u = r.sobol.at(uint32(t), p.dim)
		}
		x[p.dim] = p.fromUnit(u)
	}
	return x
}

// allParams lists every parameter, nested ones included, in dimension order.
func (s *space) allParams() []*param {
	out := make([]*param, s.ndims)
	var walk func([]*param)
	walk = func(ps []*param) {
		for _, p := range ps {
			out[p.dim] = p
			for _, n := range p.nested {
				walk(n)
			}
		}
	}
	walk(s.params)
	return out
}
