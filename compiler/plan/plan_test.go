package plan

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestTemplateRenderDropsOptionalGroupsWithUnsetInputs(t *testing.T) {
	tmpl := Template{Parts: []Part{
		{Text: "train.py --lr "},
		{Ref: &Ref{Kind: RefInput, Name: "lr"}},
		{Optional: []Part{{Text: " --seed "}, {Ref: &Ref{Kind: RefInput, Name: "seed"}}}},
		{Text: " --out "},
		{Ref: &Ref{Kind: RefOutput, Name: "model"}},
		{Text: " --run "},
		{Ref: &Ref{Kind: RefName}},
	}}
	values := map[string]string{"inputs.lr": "1e-3", "outputs.model": "/o/model", "name.": "run-1"}
	lookup := func(r Ref) (string, bool) {
		v, ok := values[string(r.Kind)+"."+r.Name]
		return v, ok
	}
	require.Equal(t, "train.py --lr 1e-3 --out /o/model --run run-1", tmpl.Render(lookup))
	values["inputs.seed"] = "7"
	require.Equal(t, "train.py --lr 1e-3 --seed 7 --out /o/model --run run-1", tmpl.Render(lookup))
}

func TestComputesWalksNestedPipelines(t *testing.T) {
	p := &Plan{Pipeline: Pipeline{Steps: []Step{
		{Name: "a", Compute: "gpu"},
		{Name: "sub", Type: StepPipeline, Pipeline: &Pipeline{Steps: []Step{{Name: "b", Compute: "cpu"}, {Name: "c"}}}},
		{Name: "d", Compute: "cpu"},
	}}}
	require.Equal(t, []string{"", "cpu", "gpu"}, p.Computes())
}

func TestTaskQueues(t *testing.T) {
	require.Equal(t, DefaultTaskQueue, TaskQueue(""))
	require.Equal(t, "porch-compute-cpu-cluster", TaskQueue("cpu-cluster"))
	require.Equal(t, "azureml://datastores/ws/paths/azureml/r/s/out/", DefaultOutputURI("ws", "r", "s", "out"))
}

func TestWorkerFlagsNameTheWorkerAQueueNeeds(t *testing.T) {
	for _, c := range []struct{ compute, queue, want string }{
		{"", DefaultTaskQueue, ""},
		{"", SpotTaskQueue(DefaultTaskQueue), " --preemptible"},
		{"", ServerlessTaskQueue("small"), " --compute serverless --instance-type small"},
		{"cpu-cluster", TaskQueue("cpu-cluster"), " --compute cpu-cluster"},
		{"cpu-cluster", SpotTaskQueue(TaskQueue("cpu-cluster")), " --compute cpu-cluster --preemptible"},
		{"k8s-a", InstanceTaskQueue("k8s-a", "gpu-small"), " --compute k8s-a --instance-type gpu-small"},
		{"cpu-cluster", DefaultTaskQueue, ""},
	} {
		require.Equal(t, c.want, WorkerFlags(c.compute, c.queue), "%s on %s", c.compute, c.queue)
	}
}

func TestNoWorkerSaysWhatToStart(t *testing.T) {
	require.Equal(t, `no worker serves instance type "small" of compute "k8s" (task queue "porch-compute-k8s-small"): `+
		"start one with `porch worker --address h:7233 --compute k8s --instance-type small`",
		NoWorker("k8s", InstanceTaskQueue("k8s", "small"), "--address h:7233"))
	require.Equal(t, `no worker serves spot workers of compute "gpu" (task queue "porch-compute-gpu-spot"): `+
		"start one with `porch worker --compute gpu --preemptible`", NoWorker("gpu", SpotTaskQueue(TaskQueue("gpu")), ""))
	require.Equal(t, `no worker serves the default compute (task queue "porch"): start one with `+"`porch worker`",
		NoWorker("", DefaultTaskQueue, ""))
}
