package plan

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// ServerlessTaskQueue returns the task queue that serves serverless steps
// on one instance type: porch-serverless-<instance type>. Workers serving
// the default compute serve it for the instance types their labels and
// capacity allow.
func ServerlessTaskQueue(instanceType string) string {
	return DefaultTaskQueue + "-serverless-" + instanceType
}

// Serverless is what a serverless step asks of the instance type porch
// picks for it at run time.
type Serverless struct {
	// Requests are the CPU, memory and GPUs one instance of the step needs.
	Requests ResourceList `json:"requests"`
	// From names where the requests come from: an Azure VM size the step
	// named as resources.instance_type, or defaultinstancetype.
	From string `json:"from"`
}

// NeedOf is what a running step of t holds: its CPU and memory requests
// and its GPUs, which an instance type gives only as a limit (for GPUs
// Kubernetes makes the request equal to the limit).
func NeedOf(t InstanceType) ResourceList {
	need := t.Requests
	need.GPU = t.Limits.GPU
	return need
}

// Covers says whether an amount gives at least what need asks, in each of
// CPU, memory and GPUs.
func (r ResourceList) Covers(need ResourceList) bool {
	return r.MilliCPU >= need.MilliCPU && r.MemoryBytes >= need.MemoryBytes && r.GPU >= need.GPU
}

// String writes an amount as "2 CPU, 8Gi, 1 GPU" (GPUs only when some).
func (r ResourceList) String() string {
	s := FormatCPU(r.MilliCPU) + " CPU, " + FormatMemory(r.MemoryBytes)
	if r.GPU > 0 {
		s += fmt.Sprintf(", %d GPU", r.GPU)
	}
	return s
}

// CheapestFirst returns the instance types whose step need covers need,
// cheapest first. Cost is what a step of the type holds of a node: GPUs
// first (the scarce and dear part), then CPU, then memory; ties go by
// name, so the order is total.
func CheapestFirst(types []InstanceType, need ResourceList) []InstanceType {
	var out []InstanceType
	for _, t := range types {
		if NeedOf(t).Covers(need) {
			out = append(out, t)
		}
	}
	slices.SortFunc(out, func(a, b InstanceType) int {
		x, y := NeedOf(a), NeedOf(b)
		return cmp.Or(cmp.Compare(x.GPU, y.GPU), cmp.Compare(x.MilliCPU, y.MilliCPU),
			cmp.Compare(x.MemoryBytes, y.MemoryBytes), strings.Compare(a.Name, b.Name))
	})
	return out
}

// ServerlessFor says what a serverless step asks, from its
// resources.instance_type: an instance type of the catalogue is used as is
// (override, the second result names it); an Azure VM size asks for that
// size's cores, memory and GPUs; none asks for defaultinstancetype's
// requests. ok is false for a name that is neither.
func ServerlessFor(cat *Catalog, instanceType string) (s *Serverless, override string, ok bool) {
	if cat == nil {
		cat = &Catalog{}
	}
	if instanceType == "" {
		t, _ := cat.FindInstanceType(DefaultInstanceTypeName)
		return &Serverless{Requests: NeedOf(t), From: t.Name}, "", true
	}
	if t, found := cat.FindInstanceType(instanceType); found {
		return nil, t.Name, true
	}
	if r, found := SizeResources(instanceType); found {
		return &Serverless{Requests: r, From: instanceType}, "", true
	}
	return nil, "", false
}
