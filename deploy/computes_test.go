package deploy

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	sigsjson "sigs.k8s.io/json"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/porch-pipelines/porch/compiler/plan"
)

// instanceTypeAnnotation names, on a worker Deployment, the instance type
// its pods take their resources and nodeSelector from.
const instanceTypeAnnotation = "porch.dev/instance-type"

// computeFile is what the manifests take from an Azure compute file.
type computeFile struct {
	Name             string `yaml:"name"`
	Type             string `yaml:"type"`
	Size             string `yaml:"size"`
	MinInstances     int32  `yaml:"min_instances"`
	MaxInstances     int32  `yaml:"max_instances"`
	IdleBeforeScaleD int32  `yaml:"idle_time_before_scale_down"`
}

// instanceType is one item of an InstanceType or InstanceTypeList.
type instanceType struct {
	Metadata struct {
		Name string `json:"name"`
	} `json:"metadata"`
	Spec struct {
		NodeSelector map[string]string           `json:"nodeSelector,omitempty"`
		Resources    corev1.ResourceRequirements `json:"resources"`
	} `json:"spec"`
}

// defaultInstanceType is the one porch has without any applied.
func defaultInstanceType() instanceType {
	var it instanceType
	it.Metadata.Name = "defaultinstancetype"
	it.Spec.Resources = corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("2Gi")},
		Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("2Gi")},
	}
	return it
}

// loadComputes reads deploy/computes: compute files by task queue, and the
// instance types by name (defaultinstancetype included).
func loadComputes(t *testing.T) (map[string]computeFile, map[string]instanceType) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("computes", "*.yml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no compute files in computes/ (%v)", err)
	}
	computes := map[string]computeFile{}
	types := map[string]instanceType{"defaultinstancetype": defaultInstanceType()}
	for _, f := range files {
		dec := yaml.NewDecoder(mustOpen(t, f))
		for {
			var doc yaml.Node
			if err := dec.Decode(&doc); errors.Is(err, io.EOF) {
				break
			} else if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			if err := addComputeDoc(&doc, computes, types); err != nil {
				t.Fatalf("%s:%d: %v", f, doc.Line, err)
			}
		}
	}
	return computes, types
}

func addComputeDoc(doc *yaml.Node, computes map[string]computeFile, types map[string]instanceType) error {
	var head struct {
		Kind string `yaml:"kind"`
		Type string `yaml:"type"`
	}
	if err := doc.Decode(&head); err != nil {
		return err
	}
	switch {
	case head.Type == "amlcompute":
		var c computeFile
		if err := doc.Decode(&c); err != nil {
			return err
		}
		computes[plan.TaskQueue(c.Name)] = c
	case head.Kind == "InstanceType" || head.Kind == "InstanceTypeList":
		data, err := yaml.Marshal(doc)
		if err != nil {
			return err
		}
		js, err := sigsyaml.YAMLToJSONStrict(data)
		if err != nil {
			return err
		}
		var list struct {
			APIVersion string         `json:"apiVersion"`
			Kind       string         `json:"kind"`
			Items      []instanceType `json:"items,omitempty"`
			instanceType
		}
		if strict, err := sigsjson.UnmarshalStrict(js, &list); err != nil || len(strict) > 0 {
			return errors.Join(append(strict, err)...)
		}
		if head.Kind == "InstanceType" {
			list.Items = []instanceType{list.instanceType}
		}
		for _, it := range list.Items {
			types[it.Metadata.Name] = it
		}
	default:
		return fmt.Errorf("expected an amlcompute compute file or an InstanceType(List), found kind %q type %q", head.Kind, head.Type)
	}
	return nil
}

func mustOpen(t *testing.T, name string) io.Reader {
	t.Helper()
	data, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return strings.NewReader(string(data))
}

// TestManifestsFollowComputes checks that each worker Deployment has its
// instance type's requests, limits and nodeSelector, and that its
// autoscaler keeps to its compute's min_instances, max_instances and
// idle_time_before_scale_down.
func TestManifestsFollowComputes(t *testing.T) {
	computes, types := loadComputes(t)
	m := loadManifests(t, "kubernetes")
	served := map[string]bool{}
	for _, d := range m.deployments {
		where := m.where[d]
		pod := d.Spec.Template.Spec
		queues, _ := workerQueues(pod.Containers[0].Args)
		for _, q := range queues {
			if c, ok := computes[q]; ok {
				served[q] = true
				m.checkScaling(t, d.Name, c)
				checkNode(t, where+": Deployment "+d.Name, c, pod.Containers[0])
			}
		}
		name := d.Annotations[instanceTypeAnnotation]
		it, ok := types[name]
		if !ok {
			t.Errorf("%s: Deployment %q: annotation %s %q names no instance type in computes/ (have %q)",
				where, d.Name, instanceTypeAnnotation, name, slices.Sorted(maps.Keys(types)))
			continue
		}
		if diff := resourceDiff(it.Spec.Resources, pod.Containers[0].Resources); diff != "" {
			t.Errorf("%s: Deployment %q does not have the resources of instance type %q: %s", where, d.Name, name, diff)
		}
		for k, v := range it.Spec.NodeSelector {
			if pod.NodeSelector[k] != v {
				t.Errorf("%s: Deployment %q: nodeSelector lacks %s: %s of instance type %q", where, d.Name, k, v, name)
			}
		}
	}
	for _, q := range sortedKeys(computes) {
		if !served[q] {
			t.Errorf("computes/: compute %q has no worker Deployment in kubernetes/", computes[q].Name)
		}
	}
}

// checkScaling holds the ScaledObject of Deployment name to compute c.
func (m *manifests) checkScaling(t *testing.T, name string, c computeFile) {
	for _, so := range m.scaledObjects {
		if so.Spec.ScaleTargetRef.Name != name {
			continue
		}
		where := m.where[so]
		if lo, hi := so.Spec.MinReplicaCount, so.Spec.MaxReplicaCount; lo == nil || hi == nil || *lo != c.MinInstances || *hi != c.MaxInstances {
			t.Errorf("%s: ScaledObject %q: want minReplicaCount %d and maxReplicaCount %d, compute %q's min_instances and max_instances",
				where, so.Name, c.MinInstances, c.MaxInstances, c.Name)
		}
		idle := c.IdleBeforeScaleD
		if idle == 0 {
			idle = 120 // Azure's default
		}
		adv := so.Spec.Advanced
		if so.Spec.CooldownPeriod == nil || *so.Spec.CooldownPeriod != idle || adv == nil || adv.HorizontalPodAutoscalerConfig == nil ||
			adv.HorizontalPodAutoscalerConfig.Behavior == nil || adv.HorizontalPodAutoscalerConfig.Behavior.ScaleDown == nil ||
			ptrValue(adv.HorizontalPodAutoscalerConfig.Behavior.ScaleDown.StabilizationWindowSeconds) != idle {
			t.Errorf("%s: ScaledObject %q: want cooldownPeriod and scaleDown.stabilizationWindowSeconds %d, compute %q's idle_time_before_scale_down",
				where, so.Name, idle, c.Name)
		}
	}
}

func ptrValue(p *int32) int32 {
	if p == nil {
		return -1
	}
	return *p
}

// resourceDiff says how got's requests and limits differ from want's.
func resourceDiff(want, got corev1.ResourceRequirements) string {
	var diffs []string
	for _, side := range []struct {
		name      string
		want, got corev1.ResourceList
	}{{"requests", want.Requests, got.Requests}, {"limits", want.Limits, got.Limits}} {
		names := slices.Sorted(maps.Keys(side.want))
		for n := range side.got {
			if !slices.Contains(names, n) {
				names = append(names, n)
			}
		}
		for _, n := range names {
			w, okW := side.want[n]
			g, okG := side.got[n]
			if okW != okG || w.Cmp(g) != 0 {
				diffs = append(diffs, fmt.Sprintf("%s.%s is %s, want %s", side.name, n, quantity(g, okG), quantity(w, okW)))
			}
		}
	}
	return strings.Join(diffs, "; ")
}

func quantity(q resource.Quantity, ok bool) string {
	if !ok {
		return "absent"
	}
	return q.String()
}

// vmMemory is the memory of the Azure VM sizes computes/ names, as Azure
// documents them; porch reads a size's vCPUs from its name
// (plan.SizeCores), not its memory.
var vmMemory = map[string]string{
	"Standard_D4s_v3":  "16Gi",
	"Standard_NC6s_v3": "112Gi",
}

// checkNode holds the worker of an amlcompute to one node of its VM size:
// one step at a time (--slots 1, as an Azure ML node runs one job, so a
// backlog scales the Deployment out), within the size's vCPUs and memory.
func checkNode(t *testing.T, where string, c computeFile, ctr corev1.Container) {
	if c.Type != "amlcompute" {
		return
	}
	if got := flagValue(ctr.Args, "--slots"); got != "1" {
		t.Errorf("%s: want --slots 1 (one step per node, as on Azure ML; without it one pod takes every step and nothing scales out), found %q", where, got)
	}
	cores, ok := plan.SizeCores(c.Size)
	mem, known := vmMemory[c.Size]
	if !ok || !known {
		t.Errorf("%s: VM size %q of compute %q: add its vCPUs and memory to vmMemory", where, c.Size, c.Name)
		return
	}
	if lim := ctr.Resources.Limits[corev1.ResourceCPU]; lim.Cmp(*resource.NewQuantity(int64(cores), resource.DecimalSI)) != 0 {
		t.Errorf("%s: limits.cpu %s is not the %d vCPUs of %s", where, lim.String(), cores, c.Size)
	}
	if lim := ctr.Resources.Limits[corev1.ResourceMemory]; lim.Cmp(resource.MustParse(mem)) != 0 {
		t.Errorf("%s: limits.memory %s is not the %s of %s", where, lim.String(), mem, c.Size)
	}
}
