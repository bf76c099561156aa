package compiler

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSweepOddInput compiles malformed sweep steps and jobs: each must come
// back as positioned errors, never a panic or a plan.
func TestSweepOddInput(t *testing.T) {
	step := "type: pipeline\njobs:\n  s:\n    type: sweep\n    trial: {command: echo ${{inputs.x}}, environment: {image: python}, inputs: {x: {type: string}}}\n" +
		"    objective: {primary_metric: m, goal: maximize}\n"
	job := "type: sweep\ntrial: {command: echo ${{search_space.x}}}\nobjective: {primary_metric: m, goal: minimize}\n"
	for name, text := range map[string]string{
		"space list":          step + "    search_space: [x]\n",
		"space scalar":        step + "    search_space: x\n",
		"space empty":         step + "    search_space: {}\n",
		"param null":          step + "    search_space: {x: }\n",
		"type list":           step + "    search_space: {x: {type: [choice]}}\n",
		"values map":          step + "    search_space: {x: {type: choice, values: {a: 1}}}\n",
		"values nested list":  step + "    search_space: {x: {type: choice, values: [[1]]}}\n",
		"values null item":    step + "    search_space: {x: {type: choice, values: [~]}}\n",
		"nested bad":          step + "    search_space: {x: {type: choice, values: [{y: [1]}]}}\n",
		"nested type":         step + "    search_space: {x: {type: choice, values: [{y: {type: nope}}]}}\n",
		"min list":            step + "    search_space: {x: {type: uniform, min_value: [1], max_value: 2}}\n",
		"upper float":         step + "    search_space: {x: {type: randint, upper: 2.5}}\n",
		"upper huge":          step + "    search_space: {x: {type: randint, upper: 1e30}}\n",
		"sampling list":       step + "    search_space: {x: {type: choice, values: [a]}}\n    sampling_algorithm: [grid]\n",
		"sampling no type":    step + "    search_space: {x: {type: choice, values: [a]}}\n    sampling_algorithm: {seed: 1}\n",
		"seed text":           step + "    search_space: {x: {type: choice, values: [a]}}\n    sampling_algorithm: {type: random, seed: x, rule: s, logbase: -1}\n",
		"limits list":         step + "    search_space: {x: {type: choice, values: [a]}}\n    limits: [1]\n",
		"limits text":         step + "    search_space: {x: {type: choice, values: [a]}}\n    limits: {max_total_trials: many}\n",
		"policy scalar":       step + "    search_space: {x: {type: choice, values: [a]}}\n    early_termination: bandit\n",
		"policy no type":      step + "    search_space: {x: {type: choice, values: [a]}}\n    early_termination: {slack_factor: 1}\n",
		"slack negative":      step + "    search_space: {x: {type: choice, values: [a]}}\n    early_termination: {type: bandit, slack_amount: -1}\n",
		"metric_step list":    step + "    search_space: {x: {type: choice, values: [a]}}\n    metric_step: [a]\n",
		"trial list":          "type: pipeline\njobs:\n  s:\n    type: sweep\n    trial: [a]\n",
		"trial missing file":  "type: pipeline\njobs:\n  s:\n    type: sweep\n    trial: ./nope.yml\n",
		"trial remote":        "type: pipeline\njobs:\n  s:\n    type: sweep\n    trial: azureml:train:1\n",
		"objective scalar":    step + "    search_space: {x: {type: choice, values: [a]}}\n    objective: acc\n",
		"job no space":        job,
		"job trial list":      "type: sweep\ntrial: [a]\n",
		"job open ref":        "type: sweep\ntrial: {command: \"echo ${{search_space.x\"}\nsearch_space: {x: {type: choice, values: [a]}}\n",
		"job legacy open":     "type: sweep\ntrial: {command: \"echo {search_space.x\"}\nsearch_space: {y: {type: choice, values: [a]}}\n",
		"job output scalar":   job + "search_space: {x: {type: choice, values: [a]}}\noutputs: {m: text}\n",
		"job inputs list":     job + "search_space: {x: {type: choice, values: [a]}}\ninputs: [a]\n",
		"job resources":       job + "search_space: {x: {type: choice, values: [a]}}\nresources: 3\n",
		"job no objective":    "type: sweep\ntrial: {command: echo}\nsearch_space: {x: {type: choice, values: [a]}}\n",
		"component is sweep":  "type: pipeline\njobs:\n  s:\n    component: {type: sweep}\n",
		"sweep with parallel": "type: pipeline\njobs:\n  s:\n    type: sweep\n    trial: {type: parallel}\n",
	} {
		read := memFS(map[string][]byte{"p.yml": []byte(text)})
		var p any
		var diags Diagnostics
		require.NotPanics(t, func() { pl, d := Compile("p.yml", Options{ReadFile: read}); p, diags = pl, d }, name)
		if !assert.True(t, diags.HasErrors(), "%s: no error", name) {
			continue
		}
		assert.Nil(t, p, name)
		for _, d := range diags {
			assert.NotZero(t, d.Pos.Line, "%s: %s", name, d.Summary)
			assert.NotEmpty(t, d.Detail, "%s: %s", name, d.Summary)
		}
	}
}

// TestSweepGarbled feeds truncated and garbled sweep files to the compiler:
// it must never panic, and every diagnostic must name a file.
func TestSweepGarbled(t *testing.T) {
	for _, seed := range []string{"sweep.yml", "sweep_job.yml"} {
		path := filepath.Join("testdata", "TestPlan", seed)
		data, err := os.ReadFile(path)
		require.NoError(t, err)
		for _, variant := range garble(data) {
			checkNoPanic(t, path, variant)
		}
	}
}
