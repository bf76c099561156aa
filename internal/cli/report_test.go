package cli

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/porch-pipelines/porch/workflows"
)

func TestPrintOutputsListsAtMostTwentyStepOutputs(t *testing.T) {
	var out bytes.Buffer
	a := &app{stdout: &out}
	var steps []workflows.StepState
	for i := 0; i < 25; i++ {
		steps = append(steps, workflows.StepState{Path: fmt.Sprintf("s%d", i), Outputs: []workflows.OutputLocation{
			{Name: "out", URI: fmt.Sprintf("azureml://datastores/ws/paths/azureml/r/s%d/out/", i)},
			{Name: "artifacts", URI: fmt.Sprintf("azureml://datastores/ws/paths/azureml/r/s%d/artifacts/", i)},
		}})
	}
	a.printOutputs(homePaths("/home"), watchOutcome{steps: steps})
	text := out.String()
	require.Equal(t, maxListedOutputs, strings.Count(text, ".out: "), text)
	require.NotContains(t, text, "artifacts", "a step's artifacts are not one of its outputs")
	require.Contains(t, text, "  s19.out: azureml://datastores/ws/paths/azureml/r/s19/out/\n    /home/datastores/ws/azureml/r/s19/out\n")
	require.True(t, strings.HasSuffix(text, "  ... and 5 more step outputs\n"), text)
}
