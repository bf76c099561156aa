package plan

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestDefaultInstanceType(t *testing.T) {
	var cat Catalog
	def, ok := cat.InstanceTypeFor("")
	assert.True(t, ok)
	assert.Equal(t, InstanceType{Name: "defaultinstancetype",
		Requests: ResourceList{MilliCPU: 100, MemoryBytes: 2 << 30},
		Limits:   ResourceList{MilliCPU: 2000, MemoryBytes: 2 << 30}}, def)
	assert.Empty(t, def.Check())
	assert.Equal(t, []InstanceType{def}, cat.AllInstanceTypes())
	_, ok = cat.FindInstanceType("small")
	assert.False(t, ok)

	// One applied under the name replaces the built-in one.
	mine := InstanceType{Name: DefaultInstanceTypeName, Requests: ResourceList{MilliCPU: 500, MemoryBytes: 1 << 30}}
	small := InstanceType{Name: "small", Requests: ResourceList{MilliCPU: 250, MemoryBytes: 1 << 29}}
	cat.InstanceTypes = []InstanceType{small, mine}
	got, _ := cat.InstanceTypeFor("")
	assert.Equal(t, mine, got)
	assert.Equal(t, []InstanceType{small, mine}, cat.AllInstanceTypes())
	got, _ = cat.InstanceTypeFor("small")
	assert.Equal(t, small, got)
}

func TestInstanceTypeCheck(t *testing.T) {
	ok := InstanceType{Name: "a", Requests: ResourceList{MilliCPU: 1000, MemoryBytes: 1 << 30}}
	cases := []struct {
		change func(*InstanceType)
		want   string
	}{
		{func(t *InstanceType) { t.Name = "" }, "metadata.name: the instance type has no name: give the instance type a name under metadata:"},
		{func(t *InstanceType) { t.Name = "A" }, `metadata.name: instance type name "A" has 'A' at position 1: use lower-case letters, digits, '-' and '.', starting and ending with a letter or digit`},
		{func(t *InstanceType) { t.Name = "a-" }, `metadata.name: instance type name "a-" has '-' at position 2: use lower-case letters, digits, '-' and '.', starting and ending with a letter or digit`},
		{func(t *InstanceType) { t.Requests.MilliCPU = 0 }, "spec.resources.requests.cpu: CPU request is 0: give a CPU request above zero, such as 100m or 1"},
		{func(t *InstanceType) { t.Requests.MemoryBytes = 0 }, "spec.resources.requests.memory: memory request is 0: give a memory request above zero, such as 1500Mi or 2Gi"},
		{func(t *InstanceType) { t.Requests.GPU = 1 }, "spec.resources.requests[nvidia.com/gpu]: GPUs are only allowed in limits: move nvidia.com/gpu to spec.resources.limits"},
		{func(t *InstanceType) { t.Limits.MilliCPU = 500 }, "spec.resources.limits.cpu: CPU limit 500m is below the request 1: raise the limit or lower the request (limits.cpu >= requests.cpu)"},
		{func(t *InstanceType) { t.Limits.MemoryBytes = 500 << 20 }, "spec.resources.limits.memory: memory limit 500Mi is below the request 1Gi: raise the limit or lower the request (limits.memory >= requests.memory)"},
		{func(t *InstanceType) { t.Limits.GPU = -2 }, "spec.resources.limits[nvidia.com/gpu]: GPU limit is -2: give a whole number of GPUs, 0 or more"},
	}
	for _, c := range cases {
		it := ok
		c.change(&it)
		ps := it.Check()
		if assert.Len(t, ps, 1, c.want) {
			assert.Equal(t, c.want, ps[0].Error())
		}
	}
	assert.Empty(t, ok.Check())
}

func TestFormatQuantities(t *testing.T) {
	assert.Equal(t, "2", FormatCPU(2000))
	assert.Equal(t, "1500m", FormatCPU(1500))
	assert.Equal(t, "2Gi", FormatMemory(2<<30))
	assert.Equal(t, "1500Mi", FormatMemory(1500<<20))
	assert.Equal(t, "1000", FormatMemory(1000))
	assert.Equal(t, "0", FormatMemory(0))
}

func TestComputeCheck(t *testing.T) {
	c := Compute{Name: "cpu-cluster", Type: ComputeAML, Tier: TierDedicated, MaxInstances: 1}
	assert.Empty(t, c.Check())
	k := Compute{Name: "k8s", Type: ComputeKubernetes, Namespace: "default"}
	assert.Empty(t, k.Check())
	bad := Compute{Name: "x", Type: "vm"}
	assert.Equal(t, []Problem{
		{Field: "name", Summary: `"x" is 1 characters long`, Detail: "use 2 to 16 letters, digits and '-', starting with a letter (as Azure ML requires)"},
		{Field: "type", Summary: `"vm" is not a compute type porch registers`, Detail: "write amlcompute or kubernetes"},
	}, bad.Check())
}
