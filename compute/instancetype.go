package compute

import (
	"fmt"
	"math/big"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/porch-pipelines/porch/compiler"
	"github.com/porch-pipelines/porch/compiler/plan"
)

// APIVersion is the apiVersion of Azure ML's InstanceType resources.
const APIVersion = "amlarc.azureml.com/v1alpha1"

// Kinds of instance-type files.
const (
	KindInstanceType     = "InstanceType"
	KindInstanceTypeList = "InstanceTypeList"
)

// Keys Kubernetes knows at each level of an instance type.
var (
	typeKeys      = []string{"apiVersion", "kind", "metadata", "spec"}
	listKeys      = []string{"apiVersion", "kind", "metadata", "items"}
	metadataKeys  = []string{"name", "namespace", "labels", "annotations"}
	specKeys      = []string{"nodeSelector", "resources"}
	resourcesKeys = []string{"requests", "limits"}
	amountKeys    = []string{"cpu", "memory", plan.GPUResource}
)

// InstanceTypes is a parsed InstanceType or InstanceTypeList file.
type InstanceTypes struct {
	// Types are the file's instance types, in file order.
	Types []plan.InstanceType
	file  string
	// nodes holds, for each type, the nodes of its fields by path (its
	// nodeSelector's keys with the type's prefix); prefixes the types'
	// paths in a list (items[1].).
	nodes    []map[string]*yaml.Node
	prefixes []string
}

// ParseInstanceTypes reads an InstanceType or InstanceTypeList YAML file
// (apiVersion amlarc.azureml.com/v1alpha1, as Azure ML's Kubernetes
// extension takes it), or several separated by ---, and checks every rule
// of an instance type. Each
// diagnostic names its field, such as spec.resources.requests.cpu.
func ParseInstanceTypes(file string, data []byte) (*InstanceTypes, compiler.Diagnostics) {
	docs, diags := compiler.DecodeYAMLDocuments(file, data,
		"write an InstanceType (apiVersion: "+APIVersion+", kind: InstanceType, metadata: {name: ...}, spec: {resources: ...})",
		"the top level must be keys such as apiVersion:, kind:, metadata: and spec:")
	if diags.HasErrors() {
		return nil, diags
	}
	r := newReader(file)
	r.diags = diags
	f := &InstanceTypes{file: file}
	for _, root := range docs {
		switch r.header(root) {
		case KindInstanceType:
			top := r.mapping(root, "", typeKeys, true)
			f.add(r, top, root, "")
		case KindInstanceTypeList:
			top := r.mapping(root, "", listKeys, true)
			r.mapping(top["metadata"].val, "metadata", nil, true)
			f.items(r, top["items"], root)
		}
	}
	f.checkUnique(r)
	r.diags.Sort()
	return f, r.diags
}

// header checks apiVersion and kind, returning the kind ("" when wrong).
func (r *reader) header(root *yaml.Node) string {
	top := r.mapping(root, "", nil, true)
	api, kind := top["apiVersion"], top["kind"]
	switch v := r.str(api, "apiVersion"); {
	case api.key == nil:
		r.errorf(root, "apiVersion", "write apiVersion: "+APIVersion, "the file has no apiVersion")
	case v != APIVersion:
		r.errorf(api.val, "apiVersion", "write apiVersion: "+APIVersion+" (Azure ML's instance types)", "%q is not %s", v, APIVersion)
	}
	k := r.str(kind, "kind")
	switch {
	case kind.key == nil:
		r.errorf(root, "kind", "write kind: InstanceType (one) or kind: InstanceTypeList (items: [...])", "the file has no kind")
	case k != KindInstanceType && k != KindInstanceTypeList:
		r.errorf(kind.val, "kind", withHint(compiler.Suggest(k, []string{KindInstanceType, KindInstanceTypeList}),
			"write InstanceType or InstanceTypeList"), "%q is not an instance type kind", k)
		return ""
	}
	return k
}

// items reads an InstanceTypeList's items.
func (f *InstanceTypes) items(r *reader, items entry, root *yaml.Node) {
	n := deref(items.val)
	switch {
	case items.key == nil:
		r.errorf(root, "items", "list the instance types under items:", "an InstanceTypeList needs items")
		return
	case n.Kind != yaml.SequenceNode:
		r.errorf(n, "items", "write a list: items: [{metadata: ..., spec: ...}]", "expected a list, found %s", compiler.KindName(n))
		return
	}
	for i, it := range n.Content {
		prefix := fmt.Sprintf("items[%d].", i)
		m := r.mapping(it, prefix[:len(prefix)-1], typeKeys, true)
		if m == nil {
			continue
		}
		if k := r.str(m["kind"], prefix+"kind"); m["kind"].key != nil && k != KindInstanceType {
			r.errorf(m["kind"].val, prefix+"kind", "write kind: InstanceType, or leave it out", "%q in a list of instance types", k)
		}
		if v := r.str(m["apiVersion"], prefix+"apiVersion"); m["apiVersion"].key != nil && v != APIVersion {
			r.errorf(m["apiVersion"].val, prefix+"apiVersion", "write apiVersion: "+APIVersion+", or leave it out", "%q is not %s", v, APIVersion)
		}
		f.add(r, m, deref(it), prefix)
	}
}

// add reads one instance type (metadata and spec) and checks its rules.
func (f *InstanceTypes) add(r *reader, top map[string]entry, at *yaml.Node, prefix string) {
	if top == nil {
		return
	}
	var t plan.InstanceType
	nodes := map[string]*yaml.Node{}
	meta := r.mapping(top["metadata"].val, prefix+"metadata", metadataKeys, true)
	if name := meta["name"]; name.key != nil {
		t.Name = r.str(name, prefix+plan.FieldName)
		nodes[plan.FieldName] = name.val
	} else if top["metadata"].key != nil {
		nodes[plan.FieldName] = top["metadata"].key
	} else {
		nodes[plan.FieldName] = at
	}
	r.labels(meta["labels"], prefix+"metadata.labels", nil)
	r.labels(meta["annotations"], prefix+"metadata.annotations", nil)
	spec := r.mapping(top["spec"].val, prefix+"spec", specKeys, true)
	t.NodeSelector = r.labels(spec["nodeSelector"], prefix+plan.FieldNodeSelector, nodes)
	specAt := at
	if top["spec"].key != nil {
		specAt = top["spec"].key
	}
	res := r.mapping(spec["resources"].val, prefix+"spec.resources", resourcesKeys, true)
	switch {
	case spec == nil || res == nil:
		// Already reported: a spec or resources that is not a mapping.
		r.bad[prefix+plan.FieldRequestCPU], r.bad[prefix+plan.FieldRequestMemory] = true, true
	case spec["resources"].key == nil:
		r.errorf(specAt, prefix+"spec.resources", "give spec.resources.requests with cpu and memory", "the instance type has no resources")
		r.bad[prefix+plan.FieldRequestCPU], r.bad[prefix+plan.FieldRequestMemory] = true, true
	default:
		f.amounts(r, res["requests"], prefix, true, &t.Requests, nodes, spec["resources"].key)
		f.amounts(r, res["limits"], prefix, false, &t.Limits, nodes, spec["resources"].key)
	}
	r.problems(t.Check(), prefix, nodes, specAt)
	f.Types = append(f.Types, t)
	f.nodes = append(f.nodes, nodes)
	f.prefixes = append(f.prefixes, prefix)
}

// amounts reads requests or limits into l.
func (f *InstanceTypes) amounts(r *reader, e entry, prefix string, requests bool, l *plan.ResourceList,
	nodes map[string]*yaml.Node, parent *yaml.Node) {
	section := "spec.resources.limits"
	if requests {
		section = "spec.resources.requests"
	}
	m := r.mapping(e.val, prefix+section, amountKeys, true)
	if m == nil {
		return
	}
	if requests {
		at := parent
		if e.key != nil {
			at = e.key
		}
		for _, k := range []struct{ key, name, example string }{{"cpu", "CPU", "100m or 1"}, {"memory", "memory", "1500Mi or 2Gi"}} {
			if compiler.IsNull(m[k.key].val) {
				r.errorf(at, prefix+section+"."+k.key, "give a "+k.name+" request above zero, such as "+k.example, "no %s request", k.name)
			}
		}
	}
	if g := m[plan.GPUResource]; g.key != nil {
		field := section + "[" + plan.GPUResource + "]"
		nodes[field] = g.val
		if requests {
			r.errorf(g.key, prefix+field, "move nvidia.com/gpu to spec.resources.limits", "GPUs are only allowed in limits")
		} else if q, ok := r.quantity(g, prefix+field); ok {
			if !q.IsInt() {
				r.errorf(g.val, prefix+field, "give a whole number of GPUs, such as 1", "GPU count %s is not a whole number", g.val.Value)
			} else {
				l.GPU = r.fits(q, 1, g.val, prefix+field)
			}
		}
	}
	for _, a := range []struct {
		key, name string
		scale     int64
		dst       *int64
	}{{"cpu", "CPU", 1000, &l.MilliCPU}, {"memory", "memory", 1, &l.MemoryBytes}} {
		e := m[a.key]
		field := section + "." + a.key
		nodes[field] = e.val
		q, ok := r.quantity(e, prefix+field)
		if !ok {
			continue
		}
		*a.dst = r.fits(q, a.scale, e.val, prefix+field)
		if !requests && q.Sign() == 0 {
			r.errorf(e.val, prefix+field, "remove it for no limit, or give one at least the request", "%s limit is 0", a.name)
		}
	}
}

// fits converts a quantity to an int64 of units of 1/scale, rounding up.
func (r *reader) fits(q *big.Rat, scale int64, n *yaml.Node, field string) int64 {
	v, ok := ceilInt64(q, scale)
	if !ok {
		r.errorf(n, field, "give a smaller quantity", "quantity %s is too large", n.Value)
	}
	return v
}

// checkUnique reports a name used twice in one file.
func (f *InstanceTypes) checkUnique(r *reader) {
	first := map[string]int{}
	for i, t := range f.Types {
		if t.Name == "" {
			continue
		}
		j, dup := first[t.Name]
		if !dup {
			first[t.Name] = i
			continue
		}
		first := "at line " + strconv.Itoa(f.nodes[j][plan.FieldName].Line)
		if f.prefixes[j] != "" {
			first = "in " + strings.TrimSuffix(f.prefixes[j], ".") + ", line " + strconv.Itoa(f.nodes[j][plan.FieldName].Line)
		}
		r.errorf(f.nodes[i][plan.FieldName], f.prefixes[i]+plan.FieldName, "give each instance type its own name",
			"instance type %q is defined twice (first %s)", t.Name, first)
	}
}

// CheckSelectors checks each instance type's nodeSelector against the
// computes: Azure ML applies a kubernetes compute's nodeSelector to every
// instance type on it, so a type's nodeSelector must be a subset of it.
func (f *InstanceTypes) CheckSelectors(computes []plan.Compute) compiler.Diagnostics {
	r := newReader(f.file)
	for i, t := range f.Types {
		for _, c := range computes {
			if c.Type != plan.ComputeKubernetes || len(c.NodeSelector) == 0 {
				continue
			}
			if l, missing := plan.SelectorSubset(t.NodeSelector, c.NodeSelector); missing {
				field := join(plan.FieldNodeSelector, l.Key)
				r.errorf(f.nodes[i][f.prefixes[i]+field], f.prefixes[i]+field,
					fmt.Sprintf("an instance type's nodeSelector must be a subset of its compute's: use labels from %s, or remove this one",
						plan.LabelsString(c.NodeSelector)),
					"%s=%s is not in the nodeSelector of kubernetes compute %q", l.Key, l.Value, c.Name)
			}
		}
	}
	r.diags.Sort()
	return r.diags
}
