package compiler

import (
	"fmt"
	"path/filepath"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/porch-pipelines/porch/compiler/plan"
)

// Advice for registering what a reference names.
const (
	registerData      = "porch data create -f data.yml"
	registerModel     = "porch model create -f model.yml"
	registerComponent = "porch component create -f component.yml"
)

// assetRef is a parsed workspace reference: azureml:<name>:<version>,
// azureml:<name>@latest or azureml:<name> (the latest version). Version
// "" means the latest.
type assetRef struct {
	Name, Version string
}

// catalogRef reports whether ref names an asset of the porch server's
// catalogue rather than a registry (azureml://registries/...) or an Azure
// resource id (azureml:/subscriptions/...).
func catalogRef(ref string) bool {
	rest, ok := strings.CutPrefix(strings.TrimSpace(ref), "azureml:")
	return ok && !strings.HasPrefix(rest, "/")
}

// The azureml references porch resolves, for messages.
const (
	azuremlData = "porch knows " + datastoreForm + ", and azureml:<name>:<version> and azureml:<name>@latest " +
		"for data assets registered with " + registerData + "; local paths and file:// URIs work too"
	azuremlComponents = "porch knows azureml:<name>:<version> and azureml:<name>@latest for components registered with " +
		registerComponent + "; otherwise point component: at a local .yml file"
)

// foreignRef says why porch cannot resolve an azureml reference that is no
// catalogue one (catalogRef false), what being "data" or "component": a
// summary, and detail, or for a form porch does not know the forms it
// knows.
func foreignRef(what, ref, detail string) (string, string) {
	rest := strings.TrimLeft(strings.TrimPrefix(strings.TrimSpace(ref), "azureml:"), "/")
	switch {
	case strings.HasPrefix(rest, "registries/"):
		return fmt.Sprintf("%s %q is a registry reference that porch cannot resolve", what, ref), detail
	case strings.HasPrefix(rest, "subscriptions/"):
		return fmt.Sprintf("%s %q is an Azure resource id that porch cannot resolve", what, ref), detail
	}
	known := azuremlData
	if what == "component" {
		known = azuremlComponents
	}
	return fmt.Sprintf("%s %q is no form of azureml reference porch knows", what, ref), known
}

// parseAssetRef splits a catalogue reference. A problem comes back as a
// summary and a detail, both "" when the reference is well formed.
func parseAssetRef(ref string) (assetRef, string, string) {
	rest := strings.TrimPrefix(strings.TrimSpace(ref), "azureml:")
	var r assetRef
	if name, label, ok := strings.Cut(rest, "@"); ok {
		r.Name = name
		if label != "latest" {
			return r, fmt.Sprintf("reference %q has label %q, which porch does not know", ref, label),
				fmt.Sprintf("write azureml:%s@latest or azureml:%s:<version>", name, name)
		}
	} else {
		r.Name, r.Version, _ = strings.Cut(rest, ":")
		if r.Version == "latest" {
			r.Version = ""
		}
	}
	if r.Name == "" {
		return r, fmt.Sprintf("reference %q names no asset", ref), "write azureml:<name>:<version> or azureml:<name>@latest"
	}
	return r, "", ""
}

// String is the reference in its canonical form.
func (r assetRef) String() string {
	if r.Version == "" {
		return "azureml:" + r.Name + "@latest"
	}
	return "azureml:" + r.Name + ":" + r.Version
}

// assetKind is what a data reference may name: a data asset or a model.
type assetKind struct {
	noun, register string
	list           func(*plan.Catalog) []plan.Asset
	// fits reports whether an asset of type got may be given to an input
	// of type want.
	fits func(got, want string) bool
}

var (
	dataAssets = assetKind{"data asset", registerData, func(c *plan.Catalog) []plan.Asset { return c.Data }, assetFits}
	models     = assetKind{"model", registerModel, func(c *plan.Catalog) []plan.Asset { return c.Models },
		func(got, want string) bool { return want == "" || isPrimitive(want) || got == want }}
)

// kindsFor lists where a reference given to an input of type want is
// looked up, first match first: a model input names a model (or, as
// before models could be registered, a data asset holding one), an
// untyped input a data asset or else a model, a data input a data asset.
func kindsFor(want string) []assetKind {
	switch {
	case contains(plan.ModelTypes, want):
		return []assetKind{models, dataAssets}
	case want == "" || isPrimitive(want):
		return []assetKind{dataAssets, models}
	}
	return []assetKind{dataAssets}
}

// findAsset returns the data asset or model a well-formed catalogue
// reference given to an input of type want names, and its kind; nil when
// there is none (the checker reports why).
func findAsset(cat *plan.Catalog, ref, want string) (*plan.Asset, assetKind) {
	if cat == nil || !catalogRef(ref) {
		return nil, assetKind{}
	}
	r, bad, _ := parseAssetRef(ref)
	if bad != "" {
		return nil, assetKind{}
	}
	for _, k := range kindsFor(want) {
		if a, ok := plan.FindAsset(k.list(cat), r.Name, r.Version); ok {
			return &a, k
		}
	}
	return nil, assetKind{}
}

// missingAsset explains a reference the catalogue cannot resolve: which
// names or versions are registered and how to register what is missing.
// kind is "data asset", "model" or "component"; names and versions are in
// registration order.
func missingAsset(kind, register string, r assetRef, names []string, versions []string) (string, string) {
	if len(versions) > 0 {
		return fmt.Sprintf("%s %q has no version %q", kind, r.Name, r.Version),
			fmt.Sprintf("registered versions are %s: use one of them or azureml:%s@latest, or register version %q with %s",
				quotedList(versions), r.Name, r.Version, register)
	}
	if len(names) == 0 {
		return fmt.Sprintf("%s %q is not registered", kind, r.Name),
			fmt.Sprintf("no %ss are registered: register it with %s on the porch server you run against", kind, register)
	}
	detail := fmt.Sprintf("register it with %s (registered: %s)", register, quotedList(names))
	return fmt.Sprintf("%s %q is not registered", kind, r.Name), withHint(detail, suggest(r.Name, names))
}

// quotedList quotes names in their order, at most 10 of them.
func quotedList(names []string) string {
	var b strings.Builder
	for i, n := range names {
		if i == 10 {
			fmt.Fprintf(&b, " and %d more", len(names)-i)
			break
		}
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%q", n)
	}
	return b.String()
}

// namesAndVersions lists the distinct names of entries, and the versions
// registered under name, both in registration order.
func namesAndVersions(n int, at func(int) (string, string), name string) ([]string, []string) {
	var names, versions []string
	seen := map[string]bool{}
	for i := 0; i < n; i++ {
		nm, v := at(i)
		if !seen[nm] {
			seen[nm] = true
			names = append(names, nm)
		}
		if nm == name {
			versions = append(versions, v)
		}
	}
	return names, versions
}

// dataProblem explains why the catalogue cannot resolve a data or model
// reference, or why the asset it names does not fit an input of type want
// ("" when untyped). It returns "" summaries for a reference that resolves
// and fits.
func dataProblem(cat *plan.Catalog, ref, want string) (string, string) {
	kinds := kindsFor(want)
	r, bad, detail := parseAssetRef(ref)
	if bad != "" {
		return strings.TrimSuffix(kinds[0].noun, " asset") + " " + bad, detail
	}
	if cat == nil {
		cat = &plan.Catalog{}
	}
	d, k := findAsset(cat, ref, want)
	if d == nil {
		return missingAssetOf(cat, kinds, r)
	}
	if !k.fits(d.Type, want) {
		return fmt.Sprintf("%s %q version %q is %s, but the input is %s", k.noun, d.Name, d.Version, d.Type, want),
			fmt.Sprintf("give the input type %s, or name a %s of type %s", d.Type, k.noun, want)
	}
	return "", ""
}

// missingAssetOf explains a reference that none of kinds resolves, as the
// first kind that has its name (with other versions), else the first kind.
func missingAssetOf(cat *plan.Catalog, kinds []assetKind, r assetRef) (string, string) {
	k := kinds[0]
	for _, kk := range kinds {
		if _, ok := plan.FindAsset(kk.list(cat), r.Name, ""); ok {
			k = kk
			break
		}
	}
	list := k.list(cat)
	names, versions := namesAndVersions(len(list), func(i int) (string, string) {
		return list[i].Name, list[i].Version
	}, r.Name)
	summary, detail := missingAsset(k.noun, k.register, r, names, versions)
	if m, ok := cat.FindModel(r.Name, r.Version); ok && len(kinds) == 1 {
		detail = fmt.Sprintf("%q is a registered model (%s): give the input type %s, or %s", r.Name, m.Type, m.Type, detail)
	}
	return summary, detail
}

// assetFits reports whether a data asset of type got may be given to an
// input of type want: the same type, an MLTable (a folder with an MLTable
// file) for a folder, and files or folders for a model.
func assetFits(got, want string) bool {
	switch want {
	case "", got:
		return true
	case "uri_folder":
		return got == "mltable"
	case "custom_model", "mlflow_model", "triton_model":
		return got == "uri_folder" || got == "uri_file"
	}
	return false
}

// catalogComponent parses the registered component a catalogue reference
// names, as if it were the file <Dir>/<name>.yml. It reports false when
// ref is not a catalogue reference (a registry one).
func (p *parser) catalogComponent(name string, v *yaml.Node, ref string) (*componentAST, bool) {
	if !catalogRef(ref) {
		return nil, false
	}
	pos := nodePos(name, v)
	r, bad, detail := parseAssetRef(ref)
	if bad != "" {
		p.errorf(pos, detail, "component %s", bad)
		return nil, true
	}
	cat := p.catalog
	if cat == nil {
		cat = &plan.Catalog{}
	}
	asset, ok := cat.FindComponent(r.Name, r.Version)
	if !ok {
		names, versions := namesAndVersions(len(cat.Components), func(i int) (string, string) {
			return cat.Components[i].Name, cat.Components[i].Version
		}, r.Name)
		summary, detail := missingAsset("component", registerComponent, r, names, versions)
		p.errorf(pos, detail, "%s", summary)
		return nil, true
	}
	key := "azureml:" + asset.Name + ":" + asset.Version
	if c, ok := p.components[key]; ok {
		return c, true
	}
	if p.loading[key] {
		p.errorf(pos, "a pipeline component cannot contain itself", "component %q uses itself", ref)
		return nil, true
	}
	file := filepath.Join(asset.Dir, asset.Name+".yml")
	var root *yaml.Node
	if p.countYAMLNodes(file, []byte(asset.Source)) {
		root = decodeYAML(&p.diags, file, []byte(asset.Source), p.limits.MaxAliasNodes)
	}
	if root == nil {
		p.components[key] = nil
		return nil, true
	}
	p.loading[key] = true
	c := p.parseComponent(file, root)
	delete(p.loading, key)
	p.components[key] = c
	return c, true
}

// assetData is the data a registered data asset or model gives an input
// of type typ: the asset's path, typed as the input when it says more
// than the asset.
func assetData(a plan.Asset, typ, mode string) *plan.Data {
	if typ == "" || isPrimitive(typ) {
		typ = a.Type
	}
	return &plan.Data{Type: typ, Path: a.Path, Mode: mode}
}

// setAsset resolves a --set value that names a data asset or a model. The input's
// written type, if any, must fit the asset; an inferred one gives way.
func (l *lowerer) setAsset(decl *inputAST, typ, v, source string) plan.Value {
	want := decl.Type
	if decl.Value != nil {
		want = orDefault(want, decl.Value.Type)
	}
	pos := plan.Pos{File: source}
	if !catalogRef(v) {
		summary, detail := foreignRef("data", v, readableData)
		l.errorf(pos, detail, "--set inputs.%s: %s", decl.Name, summary)
		return plan.Value{Kind: plan.ValueNone}
	}
	if summary, detail := dataProblem(l.catalog, v, want); summary != "" {
		l.errorf(pos, detail, "--set inputs.%s: %s", decl.Name, summary)
		return plan.Value{Kind: plan.ValueNone}
	}
	a, _ := findAsset(l.catalog, v, want)
	return plan.Value{Kind: plan.ValueData, Data: assetData(*a, want, valueMode(decl.Value))}
}
