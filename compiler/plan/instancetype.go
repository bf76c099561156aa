package plan

import (
	"fmt"
	"strconv"
)

// DefaultInstanceTypeName is the instance type a step without
// resources.instance_type runs as. It always exists: Azure ML's built-in
// one unless one is applied under this name.
const DefaultInstanceTypeName = "defaultinstancetype"

// GPUResource is the resource name of NVIDIA GPUs.
const GPUResource = "nvidia.com/gpu"

// ResourceList is an amount of CPU, memory and GPUs in numbers: what the
// quota, capacity and serverless code compare.
type ResourceList struct {
	MilliCPU    int64 `json:"milli_cpu,omitempty"`
	MemoryBytes int64 `json:"memory_bytes,omitempty"`
	GPU         int64 `json:"gpu,omitempty"`
}

// InstanceType is an applied instance type (porch instance-type apply),
// the InstanceType resource of Azure ML's Kubernetes extension: where a
// step may run (NodeSelector, a worker's labels must hold it) and what it
// gets (Requests) and may use at most (Limits, where 0 CPU or memory is no
// limit).
type InstanceType struct {
	Name         string       `json:"name"`
	NodeSelector []Label      `json:"node_selector,omitempty"`
	Requests     ResourceList `json:"requests"`
	Limits       ResourceList `json:"limits"`
}

// DefaultInstanceType is Azure ML's built-in defaultinstancetype: requests
// of 100m CPU and 2Gi of memory, limits of 2 CPUs and 2Gi, no GPU and no
// nodeSelector.
func DefaultInstanceType() InstanceType {
	return InstanceType{
		Name:     DefaultInstanceTypeName,
		Requests: ResourceList{MilliCPU: 100, MemoryBytes: 2 << 30},
		Limits:   ResourceList{MilliCPU: 2000, MemoryBytes: 2 << 30},
	}
}

// Field paths of an instance type's resources, as Kubernetes names them.
const (
	FieldName          = "metadata.name"
	FieldNodeSelector  = "spec.nodeSelector"
	FieldRequestCPU    = "spec.resources.requests.cpu"
	FieldRequestMemory = "spec.resources.requests.memory"
	FieldRequestGPU    = "spec.resources.requests[" + GPUResource + "]"
	FieldLimitCPU      = "spec.resources.limits.cpu"
	FieldLimitMemory   = "spec.resources.limits.memory"
	FieldLimitGPU      = "spec.resources.limits[" + GPUResource + "]"
)

// Check returns the rules the instance type breaks, each with the field
// it is about.
func (t InstanceType) Check() []Problem {
	var out []Problem
	add := func(field, detail, format string, args ...any) {
		out = append(out, Problem{Field: field, Summary: fmt.Sprintf(format, args...), Detail: detail})
	}
	switch {
	case t.Name == "":
		add(FieldName, "give the instance type a name under metadata:", "the instance type has no name")
	case len(t.Name) > 253:
		add(FieldName, "use at most 253 characters", "instance type name has %d characters", len(t.Name))
	default:
		if msg := dnsChars(t.Name, true); msg != "" {
			add(FieldName, "use lower-case letters, digits, '-' and '.', starting and ending with a letter or digit",
				"instance type name %q %s", t.Name, msg)
		}
	}
	if t.Requests.MilliCPU <= 0 {
		add(FieldRequestCPU, "give a CPU request above zero, such as 100m or 1", "CPU request is %s", FormatCPU(t.Requests.MilliCPU))
	}
	if t.Requests.MemoryBytes <= 0 {
		add(FieldRequestMemory, "give a memory request above zero, such as 1500Mi or 2Gi", "memory request is %s", FormatMemory(t.Requests.MemoryBytes))
	}
	if t.Requests.GPU != 0 {
		add(FieldRequestGPU, "move nvidia.com/gpu to spec.resources.limits", "GPUs are only allowed in limits")
	}
	if t.Limits.MilliCPU < 0 || t.Limits.MilliCPU > 0 && t.Limits.MilliCPU < t.Requests.MilliCPU {
		add(FieldLimitCPU, "raise the limit or lower the request (limits.cpu >= requests.cpu)",
			"CPU limit %s is below the request %s", FormatCPU(t.Limits.MilliCPU), FormatCPU(t.Requests.MilliCPU))
	}
	if t.Limits.MemoryBytes < 0 || t.Limits.MemoryBytes > 0 && t.Limits.MemoryBytes < t.Requests.MemoryBytes {
		add(FieldLimitMemory, "raise the limit or lower the request (limits.memory >= requests.memory)",
			"memory limit %s is below the request %s", FormatMemory(t.Limits.MemoryBytes), FormatMemory(t.Requests.MemoryBytes))
	}
	if t.Limits.GPU < 0 {
		add(FieldLimitGPU, "give a whole number of GPUs, 0 or more", "GPU limit is %d", t.Limits.GPU)
	}
	return out
}

// FindInstanceType returns an instance type by name: an applied one, else
// the built-in defaultinstancetype for that name.
func (c *Catalog) FindInstanceType(name string) (InstanceType, bool) {
	for _, t := range c.InstanceTypes {
		if t.Name == name {
			return t, true
		}
	}
	if name == DefaultInstanceTypeName {
		return DefaultInstanceType(), true
	}
	return InstanceType{}, false
}

// AllInstanceTypes lists the instance types a step may name: the
// built-in defaultinstancetype first unless one was applied under its name,
// then the applied ones in the order they were first applied.
func (c *Catalog) AllInstanceTypes() []InstanceType {
	var out []InstanceType
	if _, applied := c.findApplied(DefaultInstanceTypeName); !applied {
		out = append(out, DefaultInstanceType())
	}
	return append(out, c.InstanceTypes...)
}

func (c *Catalog) findApplied(name string) (int, bool) {
	for i, t := range c.InstanceTypes {
		if t.Name == name {
			return i, true
		}
	}
	return -1, false
}

// InstanceTypeFor is the instance type a step runs as: the one it names,
// or defaultinstancetype when it names none.
func (c *Catalog) InstanceTypeFor(name string) (InstanceType, bool) {
	if name == "" {
		name = DefaultInstanceTypeName
	}
	return c.FindInstanceType(name)
}

// FormatCPU writes millicores as Kubernetes does: whole cores as "2",
// others as "1500m".
func FormatCPU(milli int64) string {
	if milli%1000 == 0 {
		return strconv.FormatInt(milli/1000, 10)
	}
	return strconv.FormatInt(milli, 10) + "m"
}

// FormatMemory writes bytes with the largest binary suffix that divides
// them exactly ("2Gi", "1500Mi"), else as a plain number.
func FormatMemory(b int64) string {
	for _, s := range []struct {
		suffix string
		shift  uint
	}{{"Ei", 60}, {"Pi", 50}, {"Ti", 40}, {"Gi", 30}, {"Mi", 20}, {"Ki", 10}} {
		if b != 0 && b%(1<<s.shift) == 0 {
			return strconv.FormatInt(b>>s.shift, 10) + s.suffix
		}
	}
	return strconv.FormatInt(b, 10)
}
