package sweep

import (
	"math"
	"testing"

	"github.com/porch-pipelines/porch/compiler/plan"
	"github.com/stretchr/testify/require"
)

// branin is the Branin-Hoo function; its global minimum is 0.397887, at
// three points of x1 in [-5, 10], x2 in [0, 15].
func branin(x1, x2 float64) float64 {
	b := 5.1 / (4 * math.Pi * math.Pi)
	c := 5 / math.Pi
	t := 1 / (8 * math.Pi)
	return math.Pow(x2-b*x1*x1+c*x1-6, 2) + 10*(1-t)*math.Cos(x1) + 10
}

var braninSpace = []plan.Parameter{
	{Name: "x1", Kind: plan.ParamUniform, Min: -5, Max: 10},
	{Name: "x2", Kind: plan.ParamUniform, Min: 0, Max: 15},
}

// bestOf runs a sequential sweep of trials trials (one proposal, then its
// result) and returns the best value found.
func bestOf(t testing.TB, algorithm string, seed int64, trials int) float64 {
	s, err := NewSampler(braninSpace, plan.Sampling{Algorithm: algorithm}, plan.GoalMinimize, seed, 0)
	require.NoError(t, err)
	var obs []Observation
	best := math.Inf(1)
	for range trials {
		as, more := s.Next(1, obs)
		require.True(t, more)
		require.Len(t, as, 1)
		x1, _ := as[0].Get("x1")
		x2, _ := as[0].Get("x2")
		require.True(t, x1.Number >= -5 && x1.Number <= 10, "x1 %v out of bounds", x1.Number)
		require.True(t, x2.Number >= 0 && x2.Number <= 15, "x2 %v out of bounds", x2.Number)
		y := branin(x1.Number, x2.Number)
		best = math.Min(best, y)
		obs = append(obs, Observation{Params: as[0], Metric: y})
	}
	return best
}

// TestTPEBeatsRandomOnBranin is the acceptance test: bayesian
// sampling finds a lower Branin value than random sampling, averaged over
// 50 seeds at 30 trials.
func TestTPEBeatsRandomOnBranin(t *testing.T) {
	const seeds, trials = 50, 30
	var tpe, rnd float64
	for seed := int64(1); seed <= seeds; seed++ {
		tpe += bestOf(t, plan.SamplingBayesian, seed, trials)
		rnd += bestOf(t, plan.SamplingRandom, seed, trials)
	}
	tpe /= seeds
	rnd /= seeds
	t.Logf("mean best Branin value over %d seeds at %d trials: bayesian (TPE) %.4f, random %.4f (optimum 0.3979)", seeds, trials, tpe, rnd)
	require.Less(t, tpe, rnd, "TPE should beat random sampling on Branin")
}
