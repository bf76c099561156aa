package sweep

import (
	"math"
	"testing"

	"github.com/porch-pipelines/porch/compiler/plan"
	"github.com/stretchr/testify/require"
)

// tpeSpace mixes every kind bayesian takes, with a nested dict.
var tpeSpace = []plan.Parameter{
	{Name: "opt", Kind: plan.ParamChoice, Choices: []plan.Choice{
		dict(choice("name", "sgd"), plan.Parameter{Name: "mom", Kind: plan.ParamUniform, Min: 0, Max: 1}),
		dict(choice("name", "adam")),
	}},
	{Name: "x", Kind: plan.ParamUniform, Min: -2, Max: 2},
	{Name: "units", Kind: plan.ParamQUniform, Min: 8, Max: 64, Q: 8},
}

// score is a synthetic objective on tpeSpace, maximised by sgd with mom
// near 0.9, x near 1 and 32 units.
func score(a Assignment) float64 {
	x, _ := a.Get("x")
	u, _ := a.Get("units")
	y := -math.Pow(x.Number-1, 2) - math.Abs(u.Number-32)/32
	if n, _ := a.Get("name"); n.Text == "sgd" {
		m, _ := a.Get("mom")
		y += 1 - math.Abs(m.Number-0.9)
	}
	return y
}

// runTPE proposes batch trials at a time, observing each batch before
// the next, for total trials.
func runTPE(t testing.TB, seed int64, started, total, batch int, obs []Observation) []Observation {
	s, err := NewSampler(tpeSpace, plan.Sampling{Algorithm: plan.SamplingBayesian}, plan.GoalMaximize, seed, started)
	require.NoError(t, err)
	for len(obs) < total {
		as, more := s.Next(min(batch, total-len(obs)), obs)
		require.True(t, more)
		for _, a := range as {
			obs = append(obs, Observation{Params: a, Metric: score(a)})
		}
	}
	return obs
}

func TestTPEDeterministicAndContinues(t *testing.T) {
	a := runTPE(t, 11, 0, 30, 3, nil)
	require.Equal(t, a, runTPE(t, 11, 0, 30, 3, nil), "same seed and history, same proposals")
	require.NotEqual(t, texts(params(a)), texts(params(runTPE(t, 12, 0, 30, 3, nil))))
	// Continued as new after 15 trials, with the history so far.
	cont := runTPE(t, 11, 15, 30, 3, append([]Observation(nil), a[:15]...))
	require.Equal(t, a, cont)
}

func params(obs []Observation) []Assignment {
	var out []Assignment
	for _, o := range obs {
		out = append(out, o.Params)
	}
	return out
}

func TestTPEValuesAndTree(t *testing.T) {
	obs := runTPE(t, 3, 0, 60, 1, nil)
	for _, o := range obs {
		x, _ := o.Params.Get("x")
		require.True(t, x.Number >= -2 && x.Number <= 2, "x = %v", x.Number)
		u, _ := o.Params.Get("units")
		require.True(t, u.Number >= 8 && u.Number <= 64 && math.Mod(u.Number, 8) == 0, "units = %s", u.Text)
		name, _ := o.Params.Get("name")
		_, hasMom := o.Params.Get("mom")
		require.Equal(t, name.Text == "sgd", hasMom, "mom is set exactly with sgd")
	}
}

func TestTPELearnsAChoice(t *testing.T) {
	// Only the choice matters ("b" is best); x adds a little noise. After
	// the warm-up, TPE should pick "b" far more often than 1 in 4.
	space := []plan.Parameter{
		choice("c", "a", "b", "c", "d"),
		{Name: "x", Kind: plan.ParamUniform, Min: 0, Max: 1},
	}
	worth := map[string]float64{"a": 0, "b": 1, "c": 0.2, "d": 0.5}
	picks := 0
	for seed := int64(1); seed <= 5; seed++ {
		s, err := NewSampler(space, plan.Sampling{Algorithm: plan.SamplingBayesian}, plan.GoalMaximize, seed, 0)
		require.NoError(t, err)
		var obs []Observation
		for i := range 40 {
			as, _ := s.Next(1, obs)
			c, _ := as[0].Get("c")
			x, _ := as[0].Get("x")
			obs = append(obs, Observation{Params: as[0], Metric: worth[c.Text] + 0.1*x.Number})
			if i >= 20 && c.Text == "b" {
				picks++
			}
		}
	}
	t.Logf("%d of 100 late proposals chose the best value", picks)
	require.GreaterOrEqual(t, picks, 60, "of 100 late proposals over 5 seeds, %d chose the best value", picks)
}

func TestTPEWarmupIsRandom(t *testing.T) {
	// Before tpeStartup observations, bayesian draws what random draws.
	space := braninSpace
	b, err := NewSampler(space, plan.Sampling{Algorithm: plan.SamplingBayesian}, plan.GoalMinimize, 9, 0)
	require.NoError(t, err)
	got, _ := b.Next(tpeStartup, nil)
	require.Equal(t, draw(t, space, plan.Sampling{Algorithm: plan.SamplingRandom}, 9, tpeStartup), got)
}

func TestTPEIgnoresBadObservations(t *testing.T) {
	// NaN metrics and assignments from another search space are skipped,
	// not a panic.
	obs := runTPE(t, 4, 0, 12, 4, nil)
	obs = append(obs, Observation{Params: Assignment{{Name: "x", Text: "big"}}, Metric: 1},
		Observation{Params: obs[0].Params, Metric: math.NaN()})
	s, err := NewSampler(tpeSpace, plan.Sampling{Algorithm: plan.SamplingBayesian}, plan.GoalMaximize, 4, 12)
	require.NoError(t, err)
	as, _ := s.Next(2, obs)
	require.Len(t, as, 2)
}

// BenchmarkTPENext measures one bayesian proposal with 100 observations on
// tpeSpace (3 top-level dimensions and a nested one).
func BenchmarkTPENext(b *testing.B) {
	obs := runTPE(b, 1, 0, 100, 10, nil)
	s, err := NewSampler(tpeSpace, plan.Sampling{Algorithm: plan.SamplingBayesian}, plan.GoalMaximize, 1, 100)
	require.NoError(b, err)
	b.ReportAllocs()
	for b.Loop() {
		s.Next(1, obs)
	}
}

// BenchmarkTPENextBranin is the same on the 2-dimensional Branin space.
func BenchmarkTPENextBranin(b *testing.B) {
	var obs []Observation
	as := draw(b, braninSpace, plan.Sampling{Algorithm: plan.SamplingRandom}, 1, 100)
	for _, a := range as {
		x1, _ := a.Get("x1")
		x2, _ := a.Get("x2")
		obs = append(obs, Observation{Params: a, Metric: branin(x1.Number, x2.Number)})
	}
	s, err := NewSampler(braninSpace, plan.Sampling{Algorithm: plan.SamplingBayesian}, plan.GoalMinimize, 1, 100)
	require.NoError(b, err)
	b.ReportAllocs()
	for b.Loop() {
		s.Next(1, obs)
	}
}
