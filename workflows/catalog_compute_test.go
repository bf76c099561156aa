package workflows

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/porch-pipelines/porch/compiler/plan"
)

func cluster(name string, maxInstances int) CatalogEntry {
	return CatalogEntry{Compute: &plan.Compute{Name: name, Type: plan.ComputeAML, Size: plan.DefaultSize,
		Tier: plan.TierDedicated, MaxInstances: maxInstances}}
}

func k8s(name string, selector ...plan.Label) CatalogEntry {
	return CatalogEntry{Compute: &plan.Compute{Name: name, Type: plan.ComputeKubernetes, Namespace: "default", NodeSelector: selector}}
}

func itype(name string, milliCPU int64, selector ...plan.Label) plan.InstanceType {
	return plan.InstanceType{Name: name, NodeSelector: selector,
		Requests: plan.ResourceList{MilliCPU: milliCPU, MemoryBytes: 1 << 30}}
}

func apply(types ...plan.InstanceType) CatalogEntry {
	return CatalogEntry{InstanceTypes: types}
}

var pool = plan.Label{Key: "pool", Value: "ml"}

func TestCatalogComputes(t *testing.T) {
	cat, _ := runCatalog(t, CatalogInput{}, []catalogStep{
		{update: RegisterUpdate, arg: cluster("cpu-cluster", 4)},
		{update: RegisterUpdate, arg: cluster("gpu-cluster", 2)},
		{update: RegisterUpdate, arg: cluster("cpu-cluster", 8)},
		{update: RegisterUpdate, arg: cluster("bad", 0), err: `compute "bad": max_instances: 0 is below 1`},
		{update: RegisterUpdate, arg: cluster("under_score", 1), err: `name: "under_score" has '_' at position 6`},
		{update: RemoveUpdate, arg: CatalogRemoval{Kind: KindCompute, Name: "gpu-cluster"}},
		{update: RemoveUpdate, arg: CatalogRemoval{Kind: KindCompute, Name: "gpu-cluster"}, err: `no compute "gpu-cluster" is registered`},
	}, false)
	require.Len(t, cat.Computes, 1)
	assert.Equal(t, 8, cat.Computes[0].MaxInstances, "registering again replaces, as az ml compute create updates")
}

func TestCatalogInstanceTypes(t *testing.T) {
	mine := itype(plan.DefaultInstanceTypeName, 500)
	cat, _ := runCatalog(t, CatalogInput{}, []catalogStep{
		{update: RegisterUpdate, arg: apply(itype("small", 100), itype("big", 4000))},
		{update: RegisterUpdate, arg: apply(itype("small", 200), mine)},
		{update: RegisterUpdate, arg: apply(itype("zero", 0)), err: `instance type "zero": spec.resources.requests.cpu: CPU request is 0`},
		{update: RegisterUpdate, arg: apply(itype("a", 1), itype("a", 2)), err: `instance type "a" is applied twice at once`},
		{update: RegisterUpdate, arg: CatalogEntry{InstanceTypes: []plan.InstanceType{}}, err: `exactly one of`},
		{update: RemoveUpdate, arg: CatalogRemoval{Kind: KindInstanceType, Name: "big"}},
		{update: RemoveUpdate, arg: CatalogRemoval{Kind: KindInstanceType, Name: "big"}, err: `no instance type "big" is applied`},
	}, false)
	assert.Equal(t, []plan.InstanceType{itype("small", 200), mine}, cat.InstanceTypes)
	def, _ := cat.InstanceTypeFor("")
	assert.Equal(t, mine, def, "one applied under the name replaces the built-in defaultinstancetype")

	// Removing the applied defaultinstancetype brings back the built-in one,
	// which cannot be removed itself.
	cat, _ = runCatalog(t, CatalogInput{Catalog: cat}, []catalogStep{
		{update: RemoveUpdate, arg: CatalogRemoval{Kind: KindInstanceType, Name: plan.DefaultInstanceTypeName}},
		{update: RemoveUpdate, arg: CatalogRemoval{Kind: KindInstanceType, Name: plan.DefaultInstanceTypeName}, err: `is built in`},
	}, false)
	def, _ = cat.InstanceTypeFor("")
	assert.Equal(t, plan.DefaultInstanceType(), def)
}

// TestCatalogNodeSelectors checks Azure ML's rule both ways: an instance
// type applied after a kubernetes compute, and a compute registered after
// the instance types.
func TestCatalogNodeSelectors(t *testing.T) {
	gpu := plan.Label{Key: "accelerator", Value: "a100"}
	cat, _ := runCatalog(t, CatalogInput{}, []catalogStep{
		{update: RegisterUpdate, arg: k8s("k8s", pool, gpu)},
		{update: RegisterUpdate, arg: apply(itype("inpool", 100, pool))},
		{update: RegisterUpdate, arg: apply(itype("web", 100, plan.Label{Key: "pool", Value: "web"})),
			err: `instance type "web": spec.nodeSelector pool=web is not in the nodeSelector of kubernetes compute "k8s" (pool=ml,accelerator=a100)`},
		{update: RegisterUpdate, arg: k8s("narrow", gpu),
			err: `instance type "inpool": spec.nodeSelector pool=ml is not in the nodeSelector of kubernetes compute "narrow"`},
		{update: RegisterUpdate, arg: CatalogEntry{Compute: &plan.Compute{Name: "k2", Type: plan.ComputeKubernetes, Namespace: "default",
			DefaultInstanceType: "nope"}}, err: `properties.default_instance_type "nope" is not an applied instance type`},
		{update: RegisterUpdate, arg: CatalogEntry{Compute: &plan.Compute{Name: "k3", Type: plan.ComputeKubernetes, Namespace: "default",
			DefaultInstanceType: "inpool"}}},
		{update: RemoveUpdate, arg: CatalogRemoval{Kind: KindInstanceType, Name: "inpool"},
			err: `instance type "inpool" is the default instance type of compute "k3"`},
	}, false)
	assert.Len(t, cat.Computes, 2)
	assert.Len(t, cat.InstanceTypes, 1)
}
