package cli

import (
	"errors"
	"fmt"
	"testing"

	"github.com/porch-pipelines/porch/activities"
	"github.com/porch-pipelines/porch/compiler/plan"
	"github.com/porch-pipelines/porch/workflows"
	"github.com/stretchr/testify/assert"
	"go.temporal.io/sdk/temporal"
)

func TestFillFromError(t *testing.T) {
	cause := temporal.NewNonRetryableApplicationError("command exited with code 3\nboom\nbang",
		activities.CommandFailedType, nil, activities.CommandFailure{
			ExitCode: 3, StderrTail: []string{"boom", "bang"}, LogFile: "/logs/std_log.txt",
		})
	// The step workflow wraps the activity's error in its own.
	wrapped := temporal.NewApplicationErrorWithCause("step \"b\" failed", "StepFailed", cause)
	var f stepFailure
	fillFromError(&f, fmt.Errorf("run: %w", wrapped))
	assert.Equal(t, stepFailure{message: "command exited with code 3", stderr: []string{"boom", "bang"},
		logFile: "/logs/std_log.txt"}, f)

	// Without command details the innermost message is kept.
	f = stepFailure{}
	fillFromError(&f, temporal.NewApplicationErrorWithCause("outer", "X", errors.New("disk full")))
	assert.Equal(t, "disk full", f.message)
}

func TestDeepestMessage(t *testing.T) {
	err := temporal.NewApplicationErrorWithCause("outer", "X", temporal.NewApplicationError("inner\nmore", "Y"))
	assert.Equal(t, "inner", deepestMessage(err))
	assert.Equal(t, "plain", deepestMessage(errors.New("plain")))
	assert.Equal(t, "cause", deepestMessage(fmt.Errorf("wrapper: %w", errors.New("cause"))))
	assert.Equal(t, "", deepestMessage(nil))
}

func TestStepLogFile(t *testing.T) {
	s := workflows.StepState{Path: "sub/train", Type: plan.StepCommand}
	assert.Equal(t, "/h/datastores/ds/azureml/run-1/sub/train/artifacts/user_logs/std_log.txt",
		stepLogFile("/h", "run-1", "ds", s))
	assert.Equal(t, "/h/datastores/workspaceblobstore/azureml/run-1/sub/train/artifacts/user_logs/std_log.txt",
		stepLogFile("/h", "run-1", "", s), "an unknown datastore is the default one")
	s.Outputs = []workflows.OutputLocation{{Name: plan.ArtifactsOutput, URI: "azureml://datastores/other/paths/x/"}}
	assert.Equal(t, "/h/datastores/other/x/user_logs/std_log.txt", stepLogFile("/h", "run-1", "ds", s))
	s.Type = plan.StepPipeline
	assert.Equal(t, "", stepLogFile("/h", "run-1", "ds", s), "pipeline steps have no log of their own")
}

func TestPlanComputes(t *testing.T) {
	p := &plan.Plan{Pipeline: plan.Pipeline{Steps: []plan.Step{
		{Name: "a", Type: plan.StepCommand, Compute: "gpu"},
		{Name: "sub", Type: plan.StepPipeline, Pipeline: &plan.Pipeline{Steps: []plan.Step{
			{Name: "b", Type: plan.StepCommand, Compute: "cpu"},
		}}},
	}}}
	assert.Equal(t, []string{"", "cpu", "gpu"}, planComputes(p), "the default queue runs the workflows")
}

func TestSearchAttributesHint(t *testing.T) {
	s := settings{Address: "h:7233", Namespace: "ns"}
	assert.Equal(t, "", searchAttributesHint(errors.New("connection refused"), s))
	hint := searchAttributesHint(errors.New("search attribute PorchRun is not defined"), s)
	assert.Contains(t, hint, "temporal operator search-attribute create --address h:7233 --namespace ns --name PorchCompute --type Keyword")
	for name := range workflows.SearchAttributes() {
		assert.Contains(t, hint, "--name "+name+" --type Keyword")
	}
}
