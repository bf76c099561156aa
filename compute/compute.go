// Package compute reads what administrators define about where steps run:
// Azure ML compute YAML (type: amlcompute, type: kubernetes) and the
// InstanceType and InstanceTypeList YAML of Azure ML's Kubernetes
// extension. It checks every rule Azure ML and Kubernetes apply and
// reports each problem at its file:line:col with the field it is about.
// The rules on parsed values live in compiler/plan (Compute.Check,
// InstanceType.Check), so the catalogue workflow applies the same ones.
package compute

import (
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/porch-pipelines/porch/compiler"
	"github.com/porch-pipelines/porch/compiler/plan"
)

// Keys Azure ML's compute schemas know.
var (
	commonKeys     = []string{"$schema", "name", "type", "description", "location", "tags", "identity", "resource_id"}
	amlKeys        = []string{"size", "tier", "min_instances", "max_instances", "idle_time_before_scale_down", "ssh_public_access_enabled", "ssh_settings", "network_settings", "enable_node_public_ip"}
	kubernetesKeys = []string{"namespace", "properties"}
	identityKeys   = []string{"type", "user_assigned_identities", "principal_id"}
	uaiKeys        = []string{"resource_id", "principal_id", "client_id"}
	sshKeys        = []string{"admin_username", "admin_password", "ssh_key_value"}
	networkKeys    = []string{"vnet_name", "subnet"}
	// propertiesKeys are those porch reads in a kubernetes compute's
	// properties, in both spellings Azure ML takes.
	propertiesKeys = []string{"nodeSelector", "node_selector", "defaultInstanceType", "default_instance_type",
		"instanceTypes", "instance_types"}
)

// ParseCompute reads a compute YAML file (as az ml compute create -f
// takes it), fills in Azure ML's defaults and checks its rules. Keys Azure
// ML ignores are warnings with a did-you-mean; secrets (ssh_settings) are
// never kept.
func ParseCompute(file string, data []byte) (plan.Compute, compiler.Diagnostics) {
	root, diags := compiler.DecodeYAML(file, data,
		"write a compute: name: cpu-cluster, type: amlcompute, size: ..., min_instances: ..., max_instances: ...",
		"the top level must be keys such as name:, type: and size:")
	if root == nil || diags.HasErrors() {
		return plan.Compute{}, diags
	}
	r := newReader(file)
	r.diags = diags
	all := r.mapping(root, "", nil, false)
	var c plan.Compute
	c.Type = strings.ToLower(r.str(all["type"], "type"))
	nodes := map[string]*yaml.Node{"name": all["name"].val, "type": all["type"].val}
	switch c.Type {
	case plan.ComputeAML:
		r.mapping(root, "", append(commonKeys, amlKeys...), false)
	case plan.ComputeKubernetes:
		r.mapping(root, "", append(commonKeys, kubernetesKeys...), false)
	case "":
		r.errorf(root, "type", "write type: amlcompute (a cluster) or type: kubernetes (an attached cluster)", "the compute has no type")
	default:
		r.errorf(all["type"].val, "type", withHint(compiler.Suggest(c.Type, []string{plan.ComputeAML, plan.ComputeKubernetes}),
			"porch registers amlcompute and kubernetes computes; run steps elsewhere with compute: serverless or local"),
			"%q is not a compute type porch registers", c.Type)
		r.diags.Sort()
		return c, r.diags
	}
	c.Name = r.str(all["name"], "name")
	if all["name"].key == nil {
		r.errorf(root, "name", "give the compute a name: name: cpu-cluster", "the compute has no name")
	}
	c.Description = r.str(all["description"], "description")
	c.Location = r.str(all["location"], "location")
	c.ResourceID = r.str(all["resource_id"], "resource_id")
	c.Tags = r.labels(all["tags"], "tags", nil)
	c.Identity = r.identity(all["identity"], nodes)
	if c.Type == plan.ComputeAML {
		r.aml(all, &c, nodes)
	} else {
		r.kubernetes(all, &c, nodes)
	}
	r.problems(c.Check(), "", nodes, root)
	r.diags.Sort()
	return c, r.diags
}

// aml reads an amlcompute cluster's settings, with Azure ML's defaults.
func (r *reader) aml(all map[string]entry, c *plan.Compute, nodes map[string]*yaml.Node) {
	c.Size = r.str(all["size"], "size")
	if c.Size == "" {
		c.Size = plan.DefaultSize
	} else if !vmSize.MatchString(c.Size) {
		r.errorf(all["size"].val, "size", "write an Azure VM size such as Standard_DS3_v2 or STANDARD_NC6", "%q is not a VM size", c.Size)
	}
	c.Tier = strings.ToLower(r.str(all["tier"], "tier"))
	if c.Tier == "" {
		c.Tier = plan.TierDedicated
	}
	c.MinInstances = r.integer(all["min_instances"], "min_instances", 0)
	c.MaxInstances = r.integer(all["max_instances"], "max_instances", plan.DefaultMaxInstances)
	c.IdleTimeBeforeScaleDown = r.integer(all["idle_time_before_scale_down"], "idle_time_before_scale_down", plan.DefaultIdleTimeBeforeScaleDown)
	for _, k := range []string{"tier", "min_instances", "max_instances", "idle_time_before_scale_down"} {
		nodes[k] = all[k].val
	}
	r.boolean(all["ssh_public_access_enabled"], "ssh_public_access_enabled")
	r.boolean(all["enable_node_public_ip"], "enable_node_public_ip")
	r.mapping(all["network_settings"].val, "network_settings", networkKeys, false)
	if ssh := all["ssh_settings"]; ssh.key != nil {
		// The settings are checked but never kept: admin_password is a secret.
		r.mapping(ssh.val, "ssh_settings", sshKeys, false)
		r.warnf(ssh.key, "ssh_settings", "porch's nodes are its workers, reached as you reach those machines; the settings (and any password) are not stored",
			"ssh settings are ignored")
	}
}

// vmSize is the shape of Azure VM size names.
var vmSize = regexp.MustCompile(`^(?i:standard|basic)_[A-Za-z0-9_-]+$`)

// kubernetes reads an attached Kubernetes cluster's settings.
func (r *reader) kubernetes(all map[string]entry, c *plan.Compute, nodes map[string]*yaml.Node) {
	c.Namespace = r.str(all["namespace"], "namespace")
	if c.Namespace == "" {
		c.Namespace = plan.DefaultKubernetesNamespace
	}
	nodes["namespace"] = all["namespace"].val
	props := r.mapping(all["properties"].val, "properties", propertiesKeys, false)
	sel, selField := either(props, "nodeSelector", "node_selector")
	c.NodeSelector = r.labels(sel, "properties."+selField, nil)
	def, defField := either(props, "defaultInstanceType", "default_instance_type")
	c.DefaultInstanceType = r.str(def, "properties."+defField)
	if types, field := either(props, "instanceTypes", "instance_types"); types.key != nil {
		r.warnf(types.key, "properties."+field, "write them as InstanceType resources and apply them with "+
			"`porch instance-type apply -f FILE`: every kubernetes compute offers the applied ones", "instance types here are ignored")
	}
}

// either returns the entry under whichever of two spellings is present.
func either(m map[string]entry, camel, snake string) (entry, string) {
	if e, ok := m[snake]; ok {
		return e, snake
	}
	return m[camel], camel
}

// identity reads a compute's identity. Azure ML takes its type in
// snake_case or as the REST API spells it (SystemAssigned).
func (r *reader) identity(e entry, nodes map[string]*yaml.Node) *plan.Identity {
	if e.key == nil {
		return nil
	}
	m := r.mapping(e.val, "identity", identityKeys, false)
	if m == nil {
		return nil
	}
	id := &plan.Identity{Type: snakeCase(r.str(m["type"], "identity.type"))}
	nodes["identity.type"] = m["type"].val
	if m["type"].key == nil {
		r.errorf(e.key, "identity.type", "write type: system_assigned, user_assigned or none", "the identity has no type")
	}
	uai := m["user_assigned_identities"]
	nodes["identity.user_assigned_identities"] = e.key
	if uai.key == nil {
		return id
	}
	nodes["identity.user_assigned_identities"] = uai.key
	list := deref(uai.val)
	if list.Kind != yaml.SequenceNode {
		r.errorf(list, "identity.user_assigned_identities", "write a list: [{resource_id: /subscriptions/...}]", "expected a list, found %s", compiler.KindName(list))
		return id
	}
	for i, it := range list.Content {
		field := "identity.user_assigned_identities[" + strconv.Itoa(i) + "]"
		item := r.mapping(it, field, uaiKeys, false)
		if item == nil {
			continue
		}
		rid := r.str(item["resource_id"], field+".resource_id")
		if rid == "" {
			r.bad["identity.user_assigned_identities"] = true
			r.errorf(it, field+".resource_id", "give the identity's resource_id: /subscriptions/.../userAssignedIdentities/<name>", "the identity has no resource_id")
			continue
		}
		id.UserAssignedIdentities = append(id.UserAssignedIdentities, rid)
	}
	return id
}

// snakeCase turns SystemAssigned into system_assigned and
// "SystemAssigned, UserAssigned" into system_assigned,user_assigned.
func snakeCase(s string) string {
	var b strings.Builder
	s = strings.ReplaceAll(s, " ", "")
	for i, c := range s {
		if c >= 'A' && c <= 'Z' {
			if i > 0 && s[i-1] != ',' && s[i-1] != '_' {
				b.WriteByte('_')
			}
			c += 'a' - 'A'
		}
		b.WriteRune(c)
	}
	return b.String()
}
