package workflows

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/porch-pipelines/porch/compiler/plan"
)

// validateCompute checks a compute against its own rules and against the
// applied instance types: a kubernetes compute's nodeSelector applies to
// every instance type, so each type's must be a subset of it.
func validateCompute(cat *plan.Catalog, c plan.Compute) error {
	if ps := c.Check(); len(ps) > 0 {
		return fmt.Errorf("compute %q: %s", c.Name, joinProblems(ps))
	}
	if c.Type != plan.ComputeKubernetes {
		return nil
	}
	if c.DefaultInstanceType != "" {
		if _, ok := cat.FindInstanceType(c.DefaultInstanceType); !ok {
			return fmt.Errorf("compute %q: properties.default_instance_type %q is not an applied instance type: "+
				"apply it first with `porch instance-type apply -f FILE`, or name one of %s",
				c.Name, c.DefaultInstanceType, instanceTypeNames(cat))
		}
	}
	for _, t := range cat.AllInstanceTypes() {
		if err := checkSelector(c, t); err != nil {
			return err
		}
	}
	return nil
}

// checkSelector applies Azure ML's rule: an instance type's nodeSelector
// is a subset of a kubernetes compute's.
func checkSelector(c plan.Compute, t plan.InstanceType) error {
	if c.Type != plan.ComputeKubernetes || len(c.NodeSelector) == 0 {
		return nil
	}
	if l, missing := plan.SelectorSubset(t.NodeSelector, c.NodeSelector); missing {
		return fmt.Errorf("instance type %q: spec.nodeSelector %s=%s is not in the nodeSelector of kubernetes compute %q (%s): "+
			"an instance type's nodeSelector must be a subset of its compute's", t.Name, l.Key, l.Value, c.Name,
			plan.LabelsString(c.NodeSelector))
	}
	return nil
}

// validateInstanceTypes checks the instance types of one apply: each
// type's rules, names unique within the apply, and each against every
// kubernetes compute's nodeSelector.
func validateInstanceTypes(cat *plan.Catalog, types []plan.InstanceType) error {
	if len(types) == 0 {
		return errors.New("apply names no instance type")
	}
	seen := map[string]bool{}
	for _, t := range types {
		if ps := t.Check(); len(ps) > 0 {
			return fmt.Errorf("instance type %q: %s", t.Name, joinProblems(ps))
		}
		if seen[t.Name] {
			return fmt.Errorf("instance type %q is applied twice at once: give each instance type its own name", t.Name)
		}
		seen[t.Name] = true
		for _, c := range cat.Computes {
			if err := checkSelector(c, t); err != nil {
				return err
			}
		}
	}
	return nil
}

// applyInstanceTypes adds or replaces each instance type by name and
// returns the names it replaced.
func applyInstanceTypes(cat *plan.Catalog, types []plan.InstanceType) []string {
	var replaced []string
	for _, t := range types {
		i := slices.IndexFunc(cat.InstanceTypes, func(x plan.InstanceType) bool { return x.Name == t.Name })
		if i >= 0 {
			cat.InstanceTypes[i] = t
			replaced = append(replaced, t.Name)
			continue
		}
		cat.InstanceTypes = append(cat.InstanceTypes, t)
	}
	return replaced
}

// registerCompute adds a compute or replaces one of the same name, as az
// ml compute create updates an existing compute.
func registerCompute(cat *plan.Catalog, c plan.Compute) bool {
	i := slices.IndexFunc(cat.Computes, func(x plan.Compute) bool { return x.Name == c.Name })
	if i >= 0 {
		cat.Computes[i] = c
		return true
	}
	cat.Computes = append(cat.Computes, c)
	return false
}

// findComputeEntry checks that a compute or an applied instance type to
// remove exists, and that no compute still names the instance type.
func findComputeEntry(cat *plan.Catalog, r CatalogRemoval) error {
	if r.Kind == KindCompute {
		if _, ok := cat.FindCompute(r.Name); !ok {
			return fmt.Errorf("no compute %q is registered: list them with `porch compute list`", r.Name)
		}
		return nil
	}
	if !slices.ContainsFunc(cat.InstanceTypes, func(x plan.InstanceType) bool { return x.Name == r.Name }) {
		if r.Name == plan.DefaultInstanceTypeName {
			return fmt.Errorf("instance type %q is built in: apply one under its name to replace it", r.Name)
		}
		return fmt.Errorf("no instance type %q is applied: list them with `porch instance-type list`", r.Name)
	}
	for _, c := range cat.Computes {
		if c.DefaultInstanceType == r.Name && r.Name != plan.DefaultInstanceTypeName {
			return fmt.Errorf("instance type %q is the default instance type of compute %q: change that compute first", r.Name, c.Name)
		}
	}
	return nil
}

// removeComputeEntry removes a found compute or applied instance type.
func removeComputeEntry(cat *plan.Catalog, r CatalogRemoval) {
	if r.Kind == KindCompute {
		cat.Computes = slices.DeleteFunc(cat.Computes, func(x plan.Compute) bool { return x.Name == r.Name })
		return
	}
	cat.InstanceTypes = slices.DeleteFunc(cat.InstanceTypes, func(x plan.InstanceType) bool { return x.Name == r.Name })
}

func joinProblems(ps []plan.Problem) string {
	msgs := make([]string, len(ps))
	for i, p := range ps {
		msgs[i] = p.Error()
	}
	return strings.Join(msgs, "; ")
}

func instanceTypeNames(cat *plan.Catalog) string {
	var names []string
	for _, t := range cat.AllInstanceTypes() {
		names = append(names, t.Name)
	}
	return strings.Join(names, ", ")
}
