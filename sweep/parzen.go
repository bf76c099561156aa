package sweep

import (
	"math"
	"math/rand/v2"
	"sort"
)

// parzen is a continuous dimension's density on [lo, hi]: an equally
// weighted mixture of normals truncated to the range, one on each observed
// value and a prior one on the middle of the range with the range as its
// width. Each observed component's width is the larger distance to its
// neighbours (the prior counted as one), clipped to [range/min(100, n+1),
// range], as in Hyperopt's adaptive Parzen estimator.
type parzen struct {
	lo, hi float64
	mu     []float64
	sigma  []float64
	// cdfLo, cdfHi are each component's CDF at lo and hi (standardised),
	// logNorm its log normalising constant: log(weight / (sigma * mass)).
	cdfLo, cdfHi, logNorm []float64
}

func newParzen(lo, hi float64, xs []float64) *parzen {
	p := &parzen{lo: lo, hi: hi}
	width := hi - lo
	if width <= 0 {
		return p
	}
	mid := (lo + hi) / 2
	mus := []float64{mid}
	for _, x := range xs {
		mus = append(mus, math.Min(math.Max(x, lo), hi))
	}
	sort.Float64s(mus)
	minSigma := width / math.Min(100, float64(len(mus)))
	sigmas := make([]float64, len(mus))
	for i := range mus {
		gap := 0.0
		if i > 0 {
			gap = mus[i] - mus[i-1]
		}
		if i+1 < len(mus) {
			gap = math.Max(gap, mus[i+1]-mus[i])
		}
		sigmas[i] = math.Min(math.Max(gap, minSigma), width)
	}
	// The prior keeps the whole range as its width, wherever it sorted.
	priorDone := false
	for i, m := range mus {
		if m == mid && !priorDone {
			sigmas[i], priorDone = width, true
		}
	}
	p.mu, p.sigma = mus, sigmas
	logW := -math.Log(float64(len(mus)))
	for i := range mus {
		a, b := stdCDF((lo-mus[i])/sigmas[i]), stdCDF((hi-mus[i])/sigmas[i])
		p.cdfLo, p.cdfHi = append(p.cdfLo, a), append(p.cdfHi, b)
		p.logNorm = append(p.logNorm, logW-math.Log(sigmas[i])-math.Log(b-a))
	}
	return p
}

func stdCDF(z float64) float64 { return 0.5 * math.Erfc(-z/math.Sqrt2) }

// sample picks a component, then draws from it by inverting its truncated
// CDF, which takes a fixed number of random numbers (no rejection loop).
func (p *parzen) sample(rng *rand.Rand) float64 {
	if len(p.mu) == 0 {
		return p.lo
	}
	i := rng.IntN(len(p.mu))
	u := p.cdfLo[i] + rng.Float64()*(p.cdfHi[i]-p.cdfLo[i])
	u = math.Min(math.Max(u, 1e-300), 1-1e-16)
	x := p.mu[i] - math.Sqrt2*p.sigma[i]*math.Erfcinv(2*u)
	return math.Min(math.Max(x, p.lo), p.hi)
}

func (p *parzen) logpdf(x float64) float64 {
	if len(p.mu) == 0 {
		return 0
	}
	// log-sum-exp over the components.
	terms := make([]float64, len(p.mu))
	top := math.Inf(-1)
	for i := range p.mu {
		z := (x - p.mu[i]) / p.sigma[i]
		terms[i] = p.logNorm[i] - 0.5*z*z - 0.5*math.Log(2*math.Pi)
		top = math.Max(top, terms[i])
	}
	sum := 0.0
	for _, t := range terms {
		sum += math.Exp(t - top)
	}
	return top + math.Log(sum)
}
