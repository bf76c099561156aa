package sweep

import (
	"testing"

	"github.com/porch-pipelines/porch/compiler/plan"
	"github.com/stretchr/testify/require"
)

func choice(name string, lits ...string) plan.Parameter {
	p := plan.Parameter{Name: name, Kind: plan.ParamChoice}
	for _, l := range lits {
		p.Choices = append(p.Choices, plan.Choice{Literal: l})
	}
	return p
}

func dict(entries ...plan.Parameter) plan.Choice { return plan.Choice{Nested: entries} }

// texts renders assignments as "name=text name=text" lines.
func texts(as []Assignment) []string {
	var out []string
	for _, a := range as {
		line := ""
		for i, v := range a {
			if i > 0 {
				line += " "
			}
			line += v.Name + "=" + v.Text
		}
		out = append(out, line)
	}
	return out
}

func allGrid(t *testing.T, space []plan.Parameter) []Assignment {
	t.Helper()
	s, err := NewSampler(space, plan.Sampling{Algorithm: plan.SamplingGrid}, plan.GoalMaximize, 0, 0)
	require.NoError(t, err)
	as, more := s.Next(1000, nil)
	require.False(t, more)
	return as
}

func TestGridEnumeratesExactly(t *testing.T) {
	optimizer := plan.Parameter{Name: "opt", Kind: plan.ParamChoice, Choices: []plan.Choice{
		dict(choice("name", "sgd"), choice("lr", "0.1", "0.01")),
		dict(choice("name", "adam")),
	}}
	tests := []struct {
		name  string
		space []plan.Parameter
		want  []string
	}{{
		name:  "one parameter, written order",
		space: []plan.Parameter{choice("b", "z", "x", "y")},
		want:  []string{"b=z", "b=x", "b=y"},
	}, {
		name: "parameters in name order, the first slowest",
		// Declared b before a: the grid still goes by name.
		space: []plan.Parameter{choice("b", "x", "y", "z"), choice("a", "1", "2")},
		want:  []string{"a=1 b=x", "a=1 b=y", "a=1 b=z", "a=2 b=x", "a=2 b=y", "a=2 b=z"},
	}, {
		name:  "a nested dict expands its own choices in place",
		space: []plan.Parameter{choice("batch", "16", "32"), optimizer},
		want: []string{
			`batch=16 lr=0.1 name=sgd opt={"lr":"0.1","name":"sgd"}`,
			`batch=16 lr=0.01 name=sgd opt={"lr":"0.01","name":"sgd"}`,
			`batch=16 name=adam opt={"name":"adam"}`,
			`batch=32 lr=0.1 name=sgd opt={"lr":"0.1","name":"sgd"}`,
			`batch=32 lr=0.01 name=sgd opt={"lr":"0.01","name":"sgd"}`,
			`batch=32 name=adam opt={"name":"adam"}`,
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, texts(allGrid(t, tt.space)))
			require.Equal(t, len(tt.want), GridSize(tt.space))
		})
	}
}

func TestGridProductSize(t *testing.T) {
	space := []plan.Parameter{
		choice("a", "1", "2", "3"), choice("b", "1", "2", "3", "4"), choice("c", "1", "2", "3", "4", "5"),
	}
	as := allGrid(t, space)
	require.Len(t, as, 60)
	seen := map[string]bool{}
	for _, line := range texts(as) {
		require.False(t, seen[line], "%s proposed twice", line)
		seen[line] = true
	}
	a, _ := as[59].Get("a")
	require.Equal(t, "3", a.Text)
	require.True(t, a.IsNumber)
	require.Equal(t, 3.0, a.Number)
}

func TestGridBatchesAndContinuation(t *testing.T) {
	space := []plan.Parameter{choice("a", "1", "2"), choice("b", "x", "y", "z")}
	all := allGrid(t, space)
	s, err := NewSampler(space, plan.Sampling{Algorithm: plan.SamplingGrid}, plan.GoalMaximize, 0, 0)
	require.NoError(t, err)
	first, more := s.Next(4, nil)
	require.True(t, more)
	rest, more := s.Next(4, nil)
	require.False(t, more, "the grid has 6 points")
	require.Equal(t, all, append(first, rest...))
	none, more := s.Next(1, nil)
	require.Empty(t, none)
	require.False(t, more)

	// A sweep continued as new after 4 trials proposes the last 2.
	cont, err := NewSampler(space, plan.Sampling{Algorithm: plan.SamplingGrid}, plan.GoalMaximize, 0, 4)
	require.NoError(t, err)
	tail, more := cont.Next(10, nil)
	require.False(t, more)
	require.Equal(t, all[4:], tail)
}

func TestValidateErrors(t *testing.T) {
	at := plan.Pos{File: "sweep.yml", Line: 12, Col: 5}
	lr := plan.Parameter{Name: "lr", Kind: plan.ParamLogUniform, Min: -6, Max: -1, Pos: at}
	tests := []struct {
		name     string
		space    []plan.Parameter
		sampling plan.Sampling
		want     string
	}{
		{"grid with a non-choice", []plan.Parameter{choice("a", "1"), lr}, plan.Sampling{Algorithm: plan.SamplingGrid},
			`sweep.yml:12:5: grid sampling takes only choice parameters, and "lr" is loguniform: list its values with type: choice, or use random sampling`},
		{"grid with a nested non-choice", []plan.Parameter{{Name: "o", Kind: plan.ParamChoice, Choices: []plan.Choice{dict(lr)}}},
			plan.Sampling{Algorithm: plan.SamplingGrid}, `sweep.yml:12:5: grid sampling takes only choice parameters`},
		{"bayesian with loguniform", []plan.Parameter{lr}, plan.Sampling{Algorithm: plan.SamplingBayesian},
			`sweep.yml:12:5: bayesian sampling takes only choice, uniform and quniform parameters, and "lr" is loguniform`},
		{"min above max", []plan.Parameter{{Name: "x", Kind: plan.ParamUniform, Min: 2, Max: 1, Pos: at}}, plan.Sampling{Algorithm: plan.SamplingRandom},
			`sweep.yml:12:5: uniform "x" needs min_value at most max_value, found 2 and 1`},
		{"q of 0", []plan.Parameter{{Name: "x", Kind: plan.ParamQUniform, Min: 0, Max: 1}}, plan.Sampling{Algorithm: plan.SamplingRandom},
			`quniform "x" needs q above 0, found 0`},
		{"randint upper 0", []plan.Parameter{{Name: "n", Kind: plan.ParamRandint}}, plan.Sampling{Algorithm: plan.SamplingRandom},
			`randint "n" needs upper of at least 1`},
		{"empty choice", []plan.Parameter{{Name: "c", Kind: plan.ParamChoice}}, plan.Sampling{Algorithm: plan.SamplingRandom},
			`choice "c" has no values`},
		{"nested key clashes", []plan.Parameter{choice("lr", "1"), {Name: "o", Kind: plan.ParamChoice, Choices: []plan.Choice{dict(lr)}}},
			plan.Sampling{Algorithm: plan.SamplingRandom}, `sweep.yml:12:5: parameter "lr" is set twice in one trial: rename one of them`},
		{"bad logbase", []plan.Parameter{lr}, plan.Sampling{Algorithm: plan.SamplingRandom, Logbase: "1"},
			`logbase "1" is not a valid base: use e or a positive number other than 1`},
		{"bad rule", []plan.Parameter{lr}, plan.Sampling{Algorithm: plan.SamplingRandom, Rule: "halton"},
			`unknown random sampling rule "halton": use random or sobol`},
		{"unknown algorithm", []plan.Parameter{lr}, plan.Sampling{Algorithm: "hyperband"},
			`unknown sampling algorithm "hyperband": use random, grid or bayesian`},
		{"empty space", nil, plan.Sampling{Algorithm: plan.SamplingRandom}, `the search space is empty`},
		{"loguniform beyond a float64", []plan.Parameter{{Name: "lr", Kind: plan.ParamLogUniform, Min: 710, Max: 711, Pos: at}},
			plan.Sampling{Algorithm: plan.SamplingRandom}, `sweep.yml:12:5: loguniform parameter "lr" draws up to e^711, beyond the largest number`},
		{"uniform wider than a float64", []plan.Parameter{{Name: "x", Kind: plan.ParamUniform, Min: -1.7e308, Max: 1.7e308}},
			plan.Sampling{Algorithm: plan.SamplingBayesian}, `uniform parameter "x" spans -1.7e+308 to 1.7e+308`},
		{"normal beyond a float64", []plan.Parameter{{Name: "x", Kind: plan.ParamNormal, Mu: 1.7e308, Sigma: 1e307}},
			plan.Sampling{Algorithm: plan.SamplingRandom}, `normal parameter "x" draws mu ± 8.21 sigma`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Validate(tt.space, tt.sampling)
			require.Error(t, err)
			require.Contains(t, err.Error(), tt.want)
			_, err = NewSampler(tt.space, tt.sampling, plan.GoalMaximize, 1, 0)
			require.Error(t, err)
		})
	}
	// Sibling dict values may share keys: only one of them is active.
	shared := []plan.Parameter{{Name: "o", Kind: plan.ParamChoice, Choices: []plan.Choice{
		dict(choice("name", "sgd")), dict(choice("name", "adam")),
	}}}
	require.NoError(t, Validate(shared, plan.Sampling{Algorithm: plan.SamplingGrid}))
}
