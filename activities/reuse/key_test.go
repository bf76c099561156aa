package reuse

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/porch-pipelines/porch/compiler/plan"
)

func TestKeyIgnoresOrderButNotContent(t *testing.T) {
	a := []Part{{Name: "command", Hash: "1"}, {Name: `input "x"`, Hash: "2"}}
	b := []Part{{Name: `input "x"`, Hash: "2"}, {Name: "command", Hash: "1"}}
	assert.Equal(t, Key(a), Key(b))
	c := []Part{{Name: "command", Hash: "1"}, {Name: `input "x"`, Hash: "3"}}
	assert.NotEqual(t, Key(a), Key(c))
}

func TestSpecPartsLeaveOutComputeAndNames(t *testing.T) {
	step := func(compute, display, queue string) plan.Step {
		return plan.Step{Name: "train", Path: "train", Type: plan.StepCommand, Compute: compute, DisplayName: display,
			Command: &plan.Command{Template: plan.Template{Source: "python train.py"}, Environment: "azureml:env:1",
				Resources: plan.Resources{InstanceCount: 2, TaskQueue: queue, Cores: 4}}}
	}
	base := Key(specParts(step("cpu", "Train", "q1"), nil))
	assert.Equal(t, base, Key(specParts(step("gpu", "Other name", "q2"), nil)), "compute, display name and queue are not in the key")
	other := step("cpu", "Train", "q1")
	other.Command.Resources.InstanceCount = 3
	assert.NotEqual(t, base, Key(specParts(other, nil)), "instance_count changes results")
	other = step("cpu", "Train", "q1")
	other.Command.EnvironmentVariables = map[string]string{"SEED": "1"}
	assert.NotEqual(t, base, Key(specParts(other, nil)))
}

func TestChangesSayWhatChanged(t *testing.T) {
	was := []Part{
		{Name: PartCommand, Hash: "c1"},
		{Name: PartCode, Hash: "k1"},
		{Name: InputPart("lr"), Hash: "l1", Detail: "0.1"},
		{Name: InputPart("data"), Hash: "3f2a99999999"},
		{Name: InputPart("model"), Hash: "m1", Step: "prep"},
		{Name: InputPart("gone"), Hash: "g"},
	}
	now := []Part{
		{Name: PartCommand, Hash: "c2"},
		{Name: PartCode, Hash: "k2"},
		{Name: InputPart("lr"), Hash: "l2", Detail: "0.2"},
		{Name: InputPart("data"), Hash: "9c1b88888888"},
		{Name: InputPart("model"), Hash: "m2", Step: "prep"},
	}
	got := Changes(Compare(now, was), map[string]bool{"prep": true}, "src/train.py")
	assert.Equal(t, []string{
		"command changed",
		"code changed: src/train.py",
		`input "lr" changed (0.1 → 0.2)`,
		`input "data" changed (content 3f2a9999… → 9c1b8888…)`,
		`dependency "prep" ran`,
		`input "gone" removed`,
	}, got)
	assert.Empty(t, Changes(Compare(was, was), nil, ""))
}
