package worker

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/porch-pipelines/porch/compiler/plan"
)

func TestCapacityPoolReservesAcrossTypes(t *testing.T) {
	pool := newCapacityPool(plan.ResourceList{MilliCPU: 4000, MemoryBytes: 8 << 30, GPU: 1})
	big := plan.ResourceList{MilliCPU: 3000, MemoryBytes: 2 << 30}
	gpu := plan.ResourceList{MilliCPU: 1000, MemoryBytes: 4 << 30, GPU: 1}
	require.True(t, pool.tryReserve(big))
	require.True(t, pool.tryReserve(gpu), "the rest of the CPU, half the memory and the GPU are free")
	assert.False(t, pool.tryReserve(plan.ResourceList{MilliCPU: 1}), "no CPU is left")
	pool.release(gpu)
	assert.False(t, pool.tryReserve(plan.ResourceList{MilliCPU: 2000}), "only 1 CPU is free")
	assert.True(t, pool.tryReserve(gpu))
	assert.False(t, pool.tryReserve(plan.ResourceList{MilliCPU: 0, MemoryBytes: 0, GPU: 1}), "the one GPU is held")

	assert.Equal(t, 4, pool.count(plan.ResourceList{MilliCPU: 1000, MemoryBytes: 1 << 30}))
	assert.Equal(t, 2, pool.count(plan.ResourceList{MilliCPU: 100, MemoryBytes: 4 << 30}), "memory binds first")
	assert.Equal(t, 1, pool.count(gpu))
}

func TestCapacityReservationWaitsForRelease(t *testing.T) {
	need := plan.ResourceList{MilliCPU: 1000, MemoryBytes: 1 << 30}
	pool := newCapacityPool(need)
	slots := &instanceSlots{pool: pool, need: need}
	first, err := slots.ReserveSlot(context.Background(), nil)
	require.NoError(t, err)
	require.NotNil(t, first)
	assert.Nil(t, slots.TryReserveSlot(nil), "the only slot is held")

	got := make(chan error, 1)
	go func() {
		_, err := slots.ReserveSlot(context.Background(), nil)
		got <- err
	}()
	select {
	case err := <-got:
		t.Fatalf("a second reservation returned (%v) while the capacity was held", err)
	case <-time.After(100 * time.Millisecond):
		// Still waiting, as it must: nothing was released.
	}
	slots.ReleaseSlot(nil)
	select {
	case err := <-got:
		require.NoError(t, err, "the waiting reservation takes the released capacity")
	case <-time.After(time.Minute):
		t.Fatal("a reservation did not resume after the capacity was released")
	}
	assert.Nil(t, slots.TryReserveSlot(nil), "the resumed reservation holds the capacity")
}

func TestCapacityReservationEndsWithContext(t *testing.T) {
	need := plan.ResourceList{MilliCPU: 1000}
	pool := newCapacityPool(need)
	require.True(t, pool.tryReserve(need))
	ctx, cancel := context.WithCancel(context.Background())
	got := make(chan error, 1)
	go func() { got <- pool.reserve(ctx, need) }()
	cancel()
	require.ErrorIs(t, <-got, context.Canceled)
	pool.release(need)
	assert.True(t, pool.tryReserve(need), "a cancelled reservation took nothing")
}

func TestComputeQueues(t *testing.T) {
	cat := &plan.Catalog{
		Computes: []plan.Compute{
			{Name: "k8s", Type: plan.ComputeKubernetes, NodeSelector: []plan.Label{{Key: "pool", Value: "ml"}, {Key: "gpu", Value: "a100"}}},
			{Name: "cpu", Type: plan.ComputeAML, Size: "Standard_D4"},
		},
		InstanceTypes: []plan.InstanceType{
			{Name: "small", NodeSelector: []plan.Label{{Key: "pool", Value: "ml"}}, Requests: plan.ResourceList{MilliCPU: 1000, MemoryBytes: 1 << 30}},
			{Name: "gpu", NodeSelector: []plan.Label{{Key: "gpu", Value: "a100"}}, Requests: plan.ResourceList{MilliCPU: 1000, MemoryBytes: 1 << 30}, Limits: plan.ResourceList{GPU: 1}},
			{Name: "huge", Requests: plan.ResourceList{MilliCPU: 64000, MemoryBytes: 1 << 30}},
		},
	}
	capacity := plan.ResourceList{MilliCPU: 4000, MemoryBytes: 8 << 30, GPU: 1}
	labels := []plan.Label{{Key: "pool", Value: "ml"}, {Key: "gpu", Value: "a100"}}
	names := func(qs []queue) []string {
		var out []string
		for _, q := range qs {
			out = append(out, q.name)
		}
		return out
	}

	qs, err := computeQueues(cat, "k8s", nil, labels, capacity)
	require.NoError(t, err)
	assert.Equal(t, []string{"porch-compute-k8s-defaultinstancetype", "porch-compute-k8s-small", "porch-compute-k8s-gpu"}, names(qs),
		"every type the labels satisfy and the capacity fits; huge does not fit")
	assert.Equal(t, plan.ResourceList{MilliCPU: 1000, MemoryBytes: 1 << 30}, *qs[1].need)
	assert.Equal(t, plan.ResourceList{MilliCPU: 1000, MemoryBytes: 1 << 30, GPU: 1}, *qs[2].need, "a GPU type holds its GPU limit")

	qs, err = computeQueues(cat, "k8s", nil, labels, plan.ResourceList{MilliCPU: 4000, MemoryBytes: 8 << 30})
	require.NoError(t, err)
	assert.Equal(t, []string{"porch-compute-k8s-defaultinstancetype", "porch-compute-k8s-small"}, names(qs), "no GPU, no GPU type")

	qs, err = computeQueues(cat, "k8s", []string{"small"}, labels, capacity)
	require.NoError(t, err)
	assert.Equal(t, []string{"porch-compute-k8s-small"}, names(qs))

	qs, err = computeQueues(cat, "cpu", nil, nil, capacity)
	require.NoError(t, err)
	assert.Equal(t, []string{"porch-compute-cpu"}, names(qs))
	assert.Nil(t, qs[0].need, "an amlcompute's queue holds no capacity")

	qs, err = computeQueues(cat, "unregistered", nil, nil, capacity)
	require.NoError(t, err)
	assert.Equal(t, []string{"porch-compute-unregistered"}, names(qs))

	for _, c := range []struct {
		compute string
		named   []string
		labels  []plan.Label
		want    string
	}{
		{"k8s", []string{"small"}, []plan.Label{{Key: "pool", Value: "ml"}},
			`this worker cannot serve instance type "small" of compute "k8s": its labels lack the nodeSelector label gpu=a100: start it with --labels gpu=a100, or serve another instance type`},
		{"k8s", []string{"huge"}, labels,
			`this worker cannot serve instance type "huge" of compute "k8s": a step requests 64 CPU, 1Gi memory, 0 GPU, more than the worker's whole capacity of 4 CPU, 8Gi memory, 1 GPU: give a larger --cpu, --memory or --gpu, or serve another instance type`},
		{"k8s", []string{"smal"}, labels,
			`instance type "smal" is not applied on the porch server: use one of "defaultinstancetype", "small", "gpu", "huge", or apply it with ` + "`porch instance-type apply -f FILE`"},
		{"cpu", []string{"small"}, labels,
			`--instance-type needs a kubernetes compute, and "cpu" is not one registered on the porch server: drop --instance-type, or register it with ` + "`porch compute create -f compute.yml` (type: kubernetes)"},
		{"k8s", nil, nil,
			`this worker can serve no instance type of compute "k8s": none of "defaultinstancetype", "small", "gpu", "huge" has a nodeSelector its labels ("") satisfy and requests within its capacity of 4 CPU, 8Gi memory, 1 GPU: give --labels, --cpu, --memory or --gpu`},
	} {
		_, err := computeQueues(cat, c.compute, c.named, c.labels, capacity)
		require.Error(t, err, "%s %v", c.compute, c.named)
		assert.Equal(t, c.want, err.Error())
	}
}
