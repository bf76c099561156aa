package compiler

import (
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/porch-pipelines/porch/compiler/plan"
)

// managedIdentityKeys are the keys of a managed identity: which of the
// compute's identities to use. porch runs as the worker's own credentials
// and accepts them without effect.
var managedIdentityKeys = []string{"type", "client_id", "object_id", "msi_resource_id"}

// parseIdentity reads a job's identity: mapping and returns its type,
// normalised (managed_identity is managed), at the position of type:; nil
// when absent or after an error.
func (p *parser) parseIdentity(name string, e entry) *scalarAST {
	if e.key == nil || isNull(e.val) {
		return nil
	}
	if e.val.Kind != yaml.MappingNode {
		p.errorf(nodePos(name, e.val), "write identity: {type: user_identity} or {type: managed}",
			"identity must be a mapping, found %s", kindName(e.val))
		return nil
	}
	t := lookup(e.val, "type")
	if t == nil || isNull(t.val) {
		p.errorf(nodePos(name, e.key), "add type: user_identity, managed or aml_token", "identity has no type")
		return nil
	}
	typ := p.scalar(name, *t)
	if typ == nil {
		return nil
	}
	v := strings.ToLower(typ.Value)
	switch v {
	case "managed_identity":
		v = plan.JobIdentityManaged
	case "useridentity":
		v = plan.JobIdentityUser
	case "managedidentity":
		v = plan.JobIdentityManaged
	case "amltoken":
		v = plan.JobIdentityAMLToken
	}
	keys := []string{"type"}
	switch v {
	case plan.JobIdentityManaged:
		keys = managedIdentityKeys
	case plan.JobIdentityUser, plan.JobIdentityAMLToken:
	default:
		p.errorf(typ.Pos, withHint("use one of "+strings.Join(plan.JobIdentities, ", "), suggest(typ.Value, plan.JobIdentities)),
			"unknown identity type %q", typ.Value)
		return nil
	}
	p.fields(name, e.val, "identity", keys, nil)
	return &scalarAST{Value: v, Pos: typ.Pos}
}
