package worker

import (
	"fmt"
	"slices"
	"strings"

	"github.com/porch-pipelines/porch/compiler/plan"
)

// queue is one task queue a worker serves and, for an instance type's
// queue, what each of its steps holds of the worker's capacity.
type queue struct {
	name string
	// compute is the compute whose steps the queue serves, "" for the
	// default compute (and a node's queue).
	compute string
	// need is nil for queues without capacity accounting (the default
	// queue, an amlcompute's, a node's).
	need *plan.ResourceList
	// instanceType is the queue's instance type, whose limits its steps
	// run within; empty when need is nil.
	instanceType plan.InstanceType
	// pool is the worker's capacity, shared by its instance-type queues.
	pool *capacityPool
}

// computeQueues are the queues a worker serves for one compute. A compute
// the catalogue does not know as kubernetes is one queue; a kubernetes
// compute is a queue per instance type the worker serves (serveTypes).
func computeQueues(cat *plan.Catalog, compute string, named []string, labels []plan.Label, capacity plan.ResourceList) ([]queue, error) {
	c, ok := cat.FindCompute(compute)
	if !ok || c.Type != plan.ComputeKubernetes {
		if len(named) > 0 && compute != "" {
			return nil, fmt.Errorf("--instance-type needs a kubernetes compute, and %q is not one registered on the porch server: "+
				"drop --instance-type, or register it with `porch compute create -f compute.yml` (type: kubernetes)", compute)
		}
		return []queue{{name: plan.TaskQueue(compute)}}, nil
	}
	types, err := serveTypes(cat, c, named, labels, capacity)
	if err != nil {
		return nil, err
	}
	out := make([]queue, 0, len(types))
	for _, t := range types {
		need := plan.NeedOf(t)
		out = append(out, queue{name: plan.InstanceTaskQueue(c.Name, t.Name), need: &need, instanceType: t})
	}
	return out, nil
}

// serveTypes are the instance types of compute c a worker serves: those
// named, or with none named every one whose nodeSelector (and the
// compute's) its labels satisfy and that fits its capacity.
func serveTypes(cat *plan.Catalog, c plan.Compute, named []string, labels []plan.Label, capacity plan.ResourceList) ([]plan.InstanceType, error) {
	var types []plan.InstanceType
	if len(named) > 0 {
		for _, n := range named {
			t, ok := cat.FindInstanceType(n)
			if !ok {
				return nil, fmt.Errorf("instance type %q is not applied on the porch server: use one of %s, or apply it with "+
					"`porch instance-type apply -f FILE`", n, typeNames(cat.AllInstanceTypes()))
			}
			if missing, ok := missingLabel(c, t, labels); ok {
				return nil, fmt.Errorf("this worker cannot serve instance type %q of compute %q: its labels lack the nodeSelector "+
					"label %s=%s: start it with --labels %s=%s, or serve another instance type", t.Name, c.Name,
					missing.Key, missing.Value, missing.Key, missing.Value)
			}
			if !fits(plan.NeedOf(t), capacity) {
				return nil, fmt.Errorf("this worker cannot serve instance type %q of compute %q: a step requests %s, more than the "+
					"worker's whole capacity of %s: give a larger --cpu, --memory or --gpu, or serve another instance type",
					t.Name, c.Name, FormatResources(plan.NeedOf(t)), FormatResources(capacity))
			}
			types = append(types, t)
		}
	} else {
		for _, t := range cat.AllInstanceTypes() {
			if _, missing := missingLabel(c, t, labels); !missing && fits(plan.NeedOf(t), capacity) {
				types = append(types, t)
			}
		}
		if len(types) == 0 {
			return nil, fmt.Errorf("this worker can serve no instance type of compute %q: none of %s has a nodeSelector its labels "+
				"(%q) satisfy and requests within its capacity of %s: give --labels, --cpu, --memory or --gpu",
				c.Name, typeNames(cat.AllInstanceTypes()), plan.LabelsString(labels), FormatResources(capacity))
		}
	}
	return types, nil
}

// missingLabel returns a label of the compute's or the instance type's
// nodeSelector that labels lack.
func missingLabel(c plan.Compute, t plan.InstanceType, labels []plan.Label) (plan.Label, bool) {
	if l, ok := plan.SelectorSubset(c.NodeSelector, labels); ok {
		return l, true
	}
	return plan.SelectorSubset(t.NodeSelector, labels)
}

// allSelectors are the labels of every nodeSelector in the catalogue: a
// worker with them satisfies all.
func allSelectors(cat *plan.Catalog) []plan.Label {
	var out []plan.Label
	for _, c := range cat.Computes {
		out = append(out, c.NodeSelector...)
	}
	for _, t := range cat.InstanceTypes {
		out = append(out, t.NodeSelector...)
	}
	return out
}

func typeNames(ts []plan.InstanceType) string {
	names := make([]string, len(ts))
	for i, t := range ts {
		names[i] = fmt.Sprintf("%q", t.Name)
	}
	return strings.Join(slices.Compact(names), ", ")
}
