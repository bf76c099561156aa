package compute

import (
	"reflect"
	"testing"

	"github.com/porch-pipelines/porch/compiler"
	"github.com/porch-pipelines/porch/compiler/plan"
)

func TestParseInstanceTypesValid(t *testing.T) {
	src := `apiVersion: amlarc.azureml.com/v1alpha1
kind: InstanceTypeList
items:
  - metadata:
      name: cpusmall
    spec:
      resources:
        requests:
          cpu: "100m"
          memory: "100Mi"
        limits:
          cpu: "1"
          nvidia.com/gpu: 0
          memory: "1Gi"
  - apiVersion: amlarc.azureml.com/v1alpha1
    kind: InstanceType
    metadata:
      name: gpu.a100-2
      labels: {team: ml}
    spec:
      nodeSelector:
        accelerator: a100
        kubernetes.io/os: linux
      resources:
        requests:
          cpu: 1.5
          memory: 1e9
        limits:
          cpu: 2
          memory: 2G
          nvidia.com/gpu: 2
`
	f, diags := ParseInstanceTypes("it.yml", []byte(src))
	if len(diags) > 0 {
		t.Fatalf("diagnostics:\n%s", diags.Error())
	}
	want := []plan.InstanceType{
		{Name: "cpusmall", NodeSelector: []plan.Label{},
			Requests: plan.ResourceList{MilliCPU: 100, MemoryBytes: 100 << 20},
			Limits:   plan.ResourceList{MilliCPU: 1000, MemoryBytes: 1 << 30}},
		{Name: "gpu.a100-2", NodeSelector: []plan.Label{{Key: "accelerator", Value: "a100"}, {Key: "kubernetes.io/os", Value: "linux"}},
			Requests: plan.ResourceList{MilliCPU: 1500, MemoryBytes: 1e9},
			Limits:   plan.ResourceList{MilliCPU: 2000, MemoryBytes: 2e9, GPU: 2}},
	}
	for i := range want {
		if want[i].NodeSelector != nil && len(want[i].NodeSelector) == 0 {
			want[i].NodeSelector = nil
		}
	}
	got := f.Types
	for i := range got {
		if len(got[i].NodeSelector) == 0 {
			got[i].NodeSelector = nil
		}
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got  %+v\nwant %+v", got, want)
	}
}

// TestInstanceTypeErrors parses every testdata/TestInstanceTypeErrors/*.yml
// and compares the diagnostics with <case>.golden: every rule's message,
// position and field.
func TestInstanceTypeErrors(t *testing.T) {
	forCases(t, "TestInstanceTypeErrors", func(file string, data []byte) compiler.Diagnostics {
		_, diags := ParseInstanceTypes(file, data)
		return diags
	})
}

// TestCheckSelectors checks that an instance type's nodeSelector must be
// a subset of every kubernetes compute's.
func TestCheckSelectors(t *testing.T) {
	src := `apiVersion: amlarc.azureml.com/v1alpha1
kind: InstanceTypeList
items:
  - metadata: {name: any}
    spec: {resources: {requests: {cpu: 1, memory: 1Gi}}}
  - metadata: {name: inpool}
    spec:
      nodeSelector: {pool: ml}
      resources: {requests: {cpu: 1, memory: 1Gi}}
  - metadata: {name: gpu}
    spec:
      nodeSelector:
        pool: ml
        accelerator: a100
      resources: {requests: {cpu: 1, memory: 1Gi}}
  - metadata: {name: otherpool}
    spec:
      nodeSelector: {pool: web}
      resources: {requests: {cpu: 1, memory: 1Gi}}
`
	f, diags := ParseInstanceTypes("it.yml", []byte(src))
	if len(diags) > 0 {
		t.Fatal(diags.Error())
	}
	computes := []plan.Compute{
		{Name: "k8s", Type: plan.ComputeKubernetes, NodeSelector: []plan.Label{{Key: "pool", Value: "ml"}}},
		{Name: "open", Type: plan.ComputeKubernetes},
		{Name: "cpu-cluster", Type: plan.ComputeAML},
	}
	want := `it.yml:14:9: error: items[2].spec.nodeSelector.accelerator: accelerator=a100 is not in the nodeSelector of kubernetes compute "k8s"
	an instance type's nodeSelector must be a subset of its compute's: use labels from pool=ml, or remove this one
it.yml:18:22: error: items[3].spec.nodeSelector.pool: pool=web is not in the nodeSelector of kubernetes compute "k8s"
	an instance type's nodeSelector must be a subset of its compute's: use labels from pool=ml, or remove this one`
	if got := f.CheckSelectors(computes).Error(); got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
	if d := f.CheckSelectors(computes[1:]); len(d) > 0 {
		t.Errorf("computes without a nodeSelector constrain nothing: %s", d.Error())
	}
}
