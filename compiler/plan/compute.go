package plan

import (
	"fmt"
	"slices"
	"strings"
)

// Compute types porch registers.
const (
	ComputeAML        = "amlcompute"
	ComputeKubernetes = "kubernetes"
)

// Compute tiers of an amlcompute cluster.
const (
	TierDedicated   = "dedicated"
	TierLowPriority = "low_priority"
)

// Identity types of a compute, as Azure ML spells them in YAML.
const (
	IdentitySystemAssigned             = "system_assigned"
	IdentityUserAssigned               = "user_assigned"
	IdentitySystemAssignedUserAssigned = "system_assigned,user_assigned"
	IdentityNone                       = "none"
)

// Defaults of an amlcompute cluster, as Azure ML documents them.
const (
	DefaultSize                    = "Standard_DS3_v2"
	DefaultMaxInstances            = 1
	DefaultIdleTimeBeforeScaleDown = 120
	DefaultKubernetesNamespace     = "default"
)

// Label is one key: value pair of a node selector or of tags.
type Label struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

// Compute is a registered compute target (porch compute create): an
// amlcompute cluster or an attached Kubernetes cluster. Steps name it as
// compute: azureml:<name>, and it is served by the task queue
// TaskQueue(Name).
type Compute struct {
	Name        string    `json:"name"`
	Type        string    `json:"type"`
	Description string    `json:"description,omitempty"`
	Location    string    `json:"location,omitempty"`
	Tags        []Label   `json:"tags,omitempty"`
	Identity    *Identity `json:"identity,omitempty"`

	// Size, Tier, MinInstances, MaxInstances and IdleTimeBeforeScaleDown
	// (seconds) are an amlcompute cluster's, with Azure's defaults filled in.
	Size                    string `json:"size,omitempty"`
	Tier                    string `json:"tier,omitempty"`
	MinInstances            int    `json:"min_instances,omitempty"`
	MaxInstances            int    `json:"max_instances,omitempty"`
	IdleTimeBeforeScaleDown int    `json:"idle_time_before_scale_down,omitempty"`

	// Namespace, ResourceID, NodeSelector and DefaultInstanceType are a
	// kubernetes compute's. NodeSelector applies to every instance type on
	// it, as the Azure ML extension's nodeSelector does: an instance
	// type's own nodeSelector must be a subset of it.
	Namespace           string  `json:"namespace,omitempty"`
	ResourceID          string  `json:"resource_id,omitempty"`
	NodeSelector        []Label `json:"node_selector,omitempty"`
	DefaultInstanceType string  `json:"default_instance_type,omitempty"`
}

// Identity is a compute's managed identity.
type Identity struct {
	Type string `json:"type"`
	// UserAssignedIdentities are the resource ids of user-assigned
	// identities.
	UserAssignedIdentities []string `json:"user_assigned_identities,omitempty"`
}

// Problem is a rule an entry breaks: the field, as a path such as
// spec.resources.requests.cpu, what is wrong and what to do.
type Problem struct {
	Field   string
	Summary string
	Detail  string
}

// Error formats the problem on one line.
func (p Problem) Error() string {
	s := p.Field + ": " + p.Summary
	if p.Detail != "" {
		s += ": " + p.Detail
	}
	return s
}

// Check returns the rules the compute breaks. Parsing fills in Azure's
// defaults first, so a zero MaxInstances here was written as 0.
func (c Compute) Check() []Problem {
	var out []Problem
	add := func(field, detail, format string, args ...any) {
		out = append(out, Problem{Field: field, Summary: fmt.Sprintf(format, args...), Detail: detail})
	}
	if msg := computeNameProblem(c.Name); msg != "" {
		add("name", "use 2 to 16 letters, digits and '-', starting with a letter (as Azure ML requires)", "%s", msg)
	}
	switch c.Type {
	case ComputeAML:
		if !slices.Contains([]string{TierDedicated, TierLowPriority}, c.Tier) {
			add("tier", "write dedicated or low_priority", "%q is not a compute tier", c.Tier)
		}
		if c.MinInstances < 0 {
			add("min_instances", "write 0 or more", "%d is negative", c.MinInstances)
		}
		if c.MaxInstances < 1 {
			add("max_instances", "a cluster needs at least one node: write 1 or more", "%d is below 1", c.MaxInstances)
		} else if c.MinInstances > c.MaxInstances {
			add("min_instances", "lower min_instances or raise max_instances",
				"%d is above max_instances %d", c.MinInstances, c.MaxInstances)
		}
		if c.IdleTimeBeforeScaleDown < 0 {
			add("idle_time_before_scale_down", "write a number of seconds, 0 or more",
				"%d is negative", c.IdleTimeBeforeScaleDown)
		}
	case ComputeKubernetes:
		if msg := dnsLabelProblem(c.Namespace); msg != "" {
			add("namespace", "write a Kubernetes namespace: lower-case letters, digits and '-', at most 63", "%q %s", c.Namespace, msg)
		}
	default:
		add("type", "write amlcompute or kubernetes", "%q is not a compute type porch registers", c.Type)
	}
	if c.Identity != nil {
		out = append(out, c.Identity.check()...)
	}
	return out
}

func (id Identity) check() []Problem {
	user := id.Type == IdentityUserAssigned || id.Type == IdentitySystemAssignedUserAssigned
	switch {
	case !slices.Contains([]string{IdentitySystemAssigned, IdentityUserAssigned, IdentitySystemAssignedUserAssigned, IdentityNone}, id.Type):
		return []Problem{{Field: "identity.type", Summary: fmt.Sprintf("%q is not an identity type Azure ML knows", id.Type),
			Detail: "write system_assigned, user_assigned, \"system_assigned,user_assigned\" or none"}}
	case user && len(id.UserAssignedIdentities) == 0:
		return []Problem{{Field: "identity.user_assigned_identities", Summary: "a user_assigned identity names no identity",
			Detail: "list them: user_assigned_identities: [{resource_id: /subscriptions/...}]"}}
	case !user && len(id.UserAssignedIdentities) > 0:
		return []Problem{{Field: "identity.user_assigned_identities", Summary: fmt.Sprintf("identity type %q takes no user_assigned_identities", id.Type),
			Detail: "remove them, or set type: user_assigned"}}
	}
	return nil
}

// computeNameProblem applies Azure ML's rule for compute names.
func computeNameProblem(name string) string {
	if name == "" {
		return "the compute has no name"
	}
	if len(name) < 2 || len(name) > 16 {
		return fmt.Sprintf("%q is %d characters long", name, len(name))
	}
	for i, r := range name {
		letter := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z'
		if i == 0 && !letter || !letter && r != '-' && (r < '0' || r > '9') {
			return fmt.Sprintf("%q has %q at position %d", name, r, i+1)
		}
	}
	return ""
}

// dnsLabelProblem applies Kubernetes's RFC 1123 label rule (namespaces).
func dnsLabelProblem(s string) string {
	if s == "" || len(s) > 63 {
		return "must have 1 to 63 characters"
	}
	return dnsChars(s, false)
}

// dnsChars checks lower-case letters, digits and '-' (and '.' when dots),
// starting and ending with a letter or digit.
func dnsChars(s string, dots bool) string {
	for i, r := range s {
		alnum := r >= 'a' && r <= 'z' || r >= '0' && r <= '9'
		edge := i == 0 || i == len(s)-1
		if !alnum && (edge || r != '-' && (!dots || r != '.')) {
			return fmt.Sprintf("has %q at position %d", r, i+1)
		}
	}
	return ""
}

// LabelsString formats labels as k=v,k=v ("" for none).
func LabelsString(ls []Label) string {
	parts := make([]string, len(ls))
	for i, l := range ls {
		parts[i] = l.Key + "=" + l.Value
	}
	return strings.Join(parts, ",")
}

// SelectorSubset returns the first label of sub that sel lacks, and
// whether there is one. An instance type's nodeSelector must be a subset of
// its compute's.
func SelectorSubset(sub, sel []Label) (Label, bool) {
	for _, l := range sub {
		if !slices.Contains(sel, l) {
			return l, true
		}
	}
	return Label{}, false
}

// FindCompute returns a registered compute.
func (c *Catalog) FindCompute(name string) (Compute, bool) {
	for _, x := range c.Computes {
		if x.Name == name {
			return x, true
		}
	}
	return Compute{}, false
}
