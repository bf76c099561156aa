package sweep

import (
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/porch-pipelines/porch/compiler/plan"
	"github.com/stretchr/testify/require"
)

func draw(t testing.TB, space []plan.Parameter, s plan.Sampling, seed int64, n int) []Assignment {
	t.Helper()
	sm, err := NewSampler(space, s, plan.GoalMaximize, seed, 0)
	require.NoError(t, err)
	as, more := sm.Next(n, nil)
	require.True(t, more)
	require.Len(t, as, n)
	return as
}

func column1(as []Assignment, name string) []Value {
	var out []Value
	for _, a := range as {
		if v, ok := a.Get(name); ok {
			out = append(out, v)
		}
	}
	return out
}

var mixedSpace = []plan.Parameter{
	choice("opt", "adam", "sgd"),
	{Name: "lr", Kind: plan.ParamLogUniform, Min: -6, Max: -1},
	{Name: "n", Kind: plan.ParamRandint, Upper: 4},
	{Name: "drop", Kind: plan.ParamUniform, Min: 0.1, Max: 0.5},
	{Name: "units", Kind: plan.ParamQUniform, Min: 8, Max: 128, Q: 8},
	{Name: "mom", Kind: plan.ParamQNormal, Mu: 0.9, Sigma: 0.05, Q: 0.01},
	{Name: "wd", Kind: plan.ParamQLogUniform, Min: -5, Max: 0, Q: 0.1},
	{Name: "z", Kind: plan.ParamNormal, Mu: 10, Sigma: 3},
	{Name: "ln", Kind: plan.ParamLogNormal, Mu: 0, Sigma: 1},
	{Name: "qln", Kind: plan.ParamQLogNormal, Mu: 1, Sigma: 0.5, Q: 2},
}

func TestRandomIsReproducibleAndSeeded(t *testing.T) {
	for _, rule := range []string{"random", "sobol"} {
		s := plan.Sampling{Algorithm: plan.SamplingRandom, Rule: rule}
		a := draw(t, mixedSpace, s, 42, 20)
		require.Equal(t, a, draw(t, mixedSpace, s, 42, 20), "rule %s: same seed, same trials", rule)
		b := draw(t, mixedSpace, s, 43, 20)
		require.NotEqual(t, texts(a), texts(b), "rule %s: another seed, other trials", rule)
		for _, as := range a {
			require.Len(t, as, len(mixedSpace))
		}
	}
}

func TestRandomBatchesAndContinuation(t *testing.T) {
	for _, rule := range []string{"random", "sobol"} {
		s := plan.Sampling{Algorithm: plan.SamplingRandom, Rule: rule}
		long := draw(t, mixedSpace, s, 7, 12)
		sm, err := NewSampler(mixedSpace, s, plan.GoalMaximize, 7, 0)
		require.NoError(t, err)
		var batched []Assignment
		for _, n := range []int{1, 3, 2} {
			as, _ := sm.Next(n, nil)
			batched = append(batched, as...)
		}
		// Continued as new after 6 trials: the same sequence from trial 6 on.
		cont, err := NewSampler(mixedSpace, s, plan.GoalMaximize, 7, 6)
		require.NoError(t, err)
		rest, _ := cont.Next(6, nil)
		require.Equal(t, long, append(batched, rest...), "rule %s", rule)
	}
}

func TestRandomBoundsAndRounding(t *testing.T) {
	const n = 4000
	as := draw(t, mixedSpace, plan.Sampling{Algorithm: plan.SamplingRandom}, 1, n)

	ints := map[string]int{}
	for _, v := range column1(as, "n") {
		require.True(t, v.Number >= 0 && v.Number < 4 && v.Number == math.Trunc(v.Number), "randint %v", v.Number)
		ints[v.Text]++
	}
	require.Len(t, ints, 4, "randint{upper: 4} draws 0, 1, 2 and 3, never 4: %v", ints)

	for _, v := range column1(as, "drop") {
		require.True(t, v.Number >= 0.1 && v.Number <= 0.5, "uniform %v", v.Number)
	}
	// loguniform is exp(U(min, max)): its log is uniform on [-6, -1], so
	// about half the logs fall below the middle, -3.5, and their mean is -3.5.
	var below, sum float64
	for _, v := range column1(as, "lr") {
		l := math.Log(v.Number)
		require.True(t, l >= -6-1e-12 && l <= -1+1e-12, "loguniform %v", v.Number)
		sum += l
		if l < -3.5 {
			below++
		}
	}
	require.InDelta(t, 0.5, below/n, 0.03)
	require.InDelta(t, -3.5, sum/n, 0.1)

	requireQ(t, column1(as, "units"), 8, 8, 128)
	requireQ(t, column1(as, "mom"), 0.01, math.Inf(-1), math.Inf(1))
	requireQ(t, column1(as, "wd"), 0.1, 0, 1)
	requireQ(t, column1(as, "qln"), 2, 0, math.Inf(1))

	var zs []float64
	for _, v := range column1(as, "z") {
		zs = append(zs, v.Number)
	}
	mean, sd := meanSD(zs)
	require.InDelta(t, 10, mean, 5*3/math.Sqrt(n), "normal{10, 3} mean")
	require.InDelta(t, 3, sd, 0.2, "normal{10, 3} sigma")
	var logs []float64
	for _, v := range column1(as, "ln") {
		require.Greater(t, v.Number, 0.0)
		logs = append(logs, math.Log(v.Number))
	}
	mean, sd = meanSD(logs)
	require.InDelta(t, 0, mean, 5/math.Sqrt(n), "lognormal{0, 1}: log is N(0, 1)")
	require.InDelta(t, 1, sd, 0.1)
}

// requireQ checks q-rounding: every value is a multiple of q, within
// [lo, hi], and written with q's decimals.
func requireQ(t *testing.T, vs []Value, q, lo, hi float64) {
	t.Helper()
	require.NotEmpty(t, vs)
	for _, v := range vs {
		k := v.Number / q
		require.InDelta(t, math.Round(k), k, 1e-9, "%s is not a multiple of %v", v.Text, q)
		require.True(t, v.Number >= lo && v.Number <= hi, "%s outside [%v, %v]", v.Text, lo, hi)
		require.NotContains(t, v.Text, "0000000", "%s is written with float noise", v.Text)
		if q == math.Trunc(q) {
			require.NotContains(t, v.Text, ".", "an integral q gives integers")
		}
	}
}

func meanSD(xs []float64) (float64, float64) {
	var m, s float64
	for _, x := range xs {
		m += x
	}
	m /= float64(len(xs))
	for _, x := range xs {
		s += (x - m) * (x - m)
	}
	return m, math.Sqrt(s / float64(len(xs)-1))
}

func TestQValueText(t *testing.T) {
	for _, tt := range []struct {
		x, q float64
		want string
	}{{0.29, 0.1, "0.3"}, {17, 8, "16"}, {-0.004, 0.01, "0"}, {1.234, 0.25, "1.25"}, {3.5, 1, "4"}, {1.01, 0.25, "1"}, {1e22, 1, "10000000000000000000000"}} {
		v := qValue("x", tt.x, tt.q)
		require.Equal(t, tt.want, v.Text, "round(%v/%v)*%v", tt.x, tt.q, tt.q)
	}
}

func TestLogbase(t *testing.T) {
	space := []plan.Parameter{{Name: "lr", Kind: plan.ParamLogUniform, Min: -4, Max: -1}}
	for _, v := range column1(draw(t, space, plan.Sampling{Algorithm: plan.SamplingRandom, Logbase: "10"}, 3, 500), "lr") {
		require.True(t, v.Number >= 1e-4*(1-1e-12) && v.Number <= 1e-1*(1+1e-12), "logbase 10: %v", v.Number)
	}
	e := column1(draw(t, space, plan.Sampling{Algorithm: plan.SamplingRandom, Logbase: "e"}, 3, 1), "lr")
	d := column1(draw(t, space, plan.Sampling{Algorithm: plan.SamplingRandom}, 3, 1), "lr")
	require.Equal(t, d, e, "logbase e is the default")
}

func TestRandomNestedDict(t *testing.T) {
	space := []plan.Parameter{{Name: "model", Kind: plan.ParamChoice, Choices: []plan.Choice{
		dict(choice("kind", "tree"), plan.Parameter{Name: "depth", Kind: plan.ParamRandint, Upper: 10}),
		dict(choice("kind", "linear"), plan.Parameter{Name: "alpha", Kind: plan.ParamUniform, Min: 0, Max: 1}),
	}}}
	as := draw(t, space, plan.Sampling{Algorithm: plan.SamplingRandom}, 5, 200)
	kinds := map[string]int{}
	for _, a := range as {
		kind, ok := a.Get("kind")
		require.True(t, ok)
		kinds[kind.Text]++
		_, depth := a.Get("depth")
		_, alpha := a.Get("alpha")
		require.Equal(t, kind.Text == "tree", depth, "depth only with a tree: %v", texts([]Assignment{a}))
		require.Equal(t, kind.Text == "linear", alpha, "alpha only with linear")
		model, _ := a.Get("model")
		require.True(t, strings.HasPrefix(model.Text, "{"), "the dict choice itself is its entries as JSON: %s", model.Text)
	}
	require.Len(t, kinds, 2)
}

// TestDrawsAtTheEdgeOfAFloat64AreFinite samples spaces just inside what
// Unencodable allows, with both rules: every value is a finite number,
// which JSON carries.
func TestDrawsAtTheEdgeOfAFloat64AreFinite(t *testing.T) {
	space := []plan.Parameter{
		{Name: "a", Kind: plan.ParamLogUniform, Min: 700, Max: 709.78},
		{Name: "b", Kind: plan.ParamUniform, Min: -8.9e307, Max: 8.9e307},
		{Name: "c", Kind: plan.ParamNormal, Mu: 1.7e308, Sigma: 1},
		{Name: "d", Kind: plan.ParamQUniform, Min: 0, Max: 1.7e308, Q: 2},
		{Name: "e", Kind: plan.ParamLogNormal, Mu: 600, Sigma: 10},
	}
	for _, rule := range []string{"random", "sobol"} {
		for _, tr := range draw(t, space, plan.Sampling{Algorithm: plan.SamplingRandom, Rule: rule}, 7, 200) {
			_, err := json.Marshal(tr)
			require.NoError(t, err, "trial %v", tr)
		}
	}
}
