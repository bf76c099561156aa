package compute

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/porch-pipelines/porch/compiler"
	"github.com/porch-pipelines/porch/compiler/plan"
)

// TestComputeErrors parses every testdata/TestComputeErrors/*.yml and
// compares the diagnostics with <case>.golden.
func TestComputeErrors(t *testing.T) {
	forCases(t, "TestComputeErrors", func(file string, data []byte) compiler.Diagnostics {
		_, diags := ParseCompute(file, data)
		return diags
	})
}

func TestParseComputeAML(t *testing.T) {
	src := `$schema: https://azuremlschemas.azureedge.net/latest/amlCompute.schema.json
name: cpu-cluster
type: amlcompute
size: STANDARD_D4
min_instances: 1
max_instances: "4"
idle_time_before_scale_down: 300
tier: Low_Priority
location: westeurope
description: training
tags: {team: ml, cost: low}
identity:
  type: SystemAssigned, UserAssigned
  user_assigned_identities:
    - resource_id: /subscriptions/s/identities/a
ssh_public_access_enabled: false
ssh_settings:
  admin_username: azureuser
  admin_password: not-kept
network_settings: {vnet_name: v, subnet: s}
enable_node_public_ip: true
`
	c, diags := ParseCompute("c.yml", []byte(src))
	require.False(t, diags.HasErrors(), diags.Error())
	assert.Equal(t, "c.yml:17:1: warning: ssh_settings: ssh settings are ignored\n"+
		"\tporch's nodes are its workers, reached as you reach those machines; the settings (and any password) are not stored", diags.Error())
	assert.Equal(t, plan.Compute{
		Name: "cpu-cluster", Type: plan.ComputeAML, Description: "training", Location: "westeurope",
		Tags: []plan.Label{{Key: "team", Value: "ml"}, {Key: "cost", Value: "low"}},
		Identity: &plan.Identity{Type: plan.IdentitySystemAssignedUserAssigned,
			UserAssignedIdentities: []string{"/subscriptions/s/identities/a"}},
		Size: "STANDARD_D4", Tier: plan.TierLowPriority, MinInstances: 1, MaxInstances: 4, IdleTimeBeforeScaleDown: 300,
	}, c)
}

// TestParseComputeDefaults checks Azure ML's defaults: size
// Standard_DS3_v2, dedicated, 0 to 1 nodes, 120 s before scaling down; a
// kubernetes compute's namespace "default".
func TestParseComputeDefaults(t *testing.T) {
	c, diags := ParseCompute("c.yml", []byte("name: cpu-cluster\ntype: amlcompute\n"))
	require.Empty(t, diags)
	assert.Equal(t, plan.Compute{Name: "cpu-cluster", Type: plan.ComputeAML, Size: "Standard_DS3_v2",
		Tier: plan.TierDedicated, MinInstances: 0, MaxInstances: 1, IdleTimeBeforeScaleDown: 120}, c)

	c, diags = ParseCompute("k.yml", []byte("name: k8s\ntype: kubernetes\nresource_id: /subscriptions/s/k\n"+
		"properties:\n  nodeSelector: {pool: ml}\n  default_instance_type: small\n"))
	require.Empty(t, diags)
	assert.Equal(t, plan.Compute{Name: "k8s", Type: plan.ComputeKubernetes, Namespace: "default", ResourceID: "/subscriptions/s/k",
		NodeSelector: []plan.Label{{Key: "pool", Value: "ml"}}, DefaultInstanceType: "small"}, c)
}
