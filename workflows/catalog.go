package workflows

import (
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"

	"go.temporal.io/sdk/workflow"

	"github.com/porch-pipelines/porch/compiler/plan"
)

// CatalogName is the workflow type of the catalogue.
const CatalogName = "Catalog"

// CatalogWorkflowID is the id of the one catalogue workflow of a namespace.
const CatalogWorkflowID = "porch-catalog"

// Update and query names of the catalogue workflow.
const (
	RegisterUpdate = "register" // takes a CatalogEntry, returns a RegisterResult
	RemoveUpdate   = "remove"   // takes a CatalogRemoval
	CatalogQuery   = "catalog"  // returns the plan.Catalog
)

// CatalogKind names what a catalogue entry is.
type CatalogKind string

// Catalogue entry kinds.
const (
	KindDatastore    CatalogKind = "datastore"
	KindData         CatalogKind = "data"
	KindModel        CatalogKind = "model"
	KindComponent    CatalogKind = "component"
	KindCompute      CatalogKind = "compute"
	KindInstanceType CatalogKind = "instance-type"
	KindEnvironment  CatalogKind = "environment"
)

// CatalogEntry is one registration: exactly one of its fields is set.
// InstanceTypes is one apply of an InstanceType or InstanceTypeList file.
type CatalogEntry struct {
	Datastore     *plan.Datastore      `json:"datastore,omitempty"`
	Data          *plan.Asset          `json:"data,omitempty"`
	Model         *plan.Asset          `json:"model,omitempty"`
	Component     *plan.ComponentAsset `json:"component,omitempty"`
	Compute       *plan.Compute        `json:"compute,omitempty"`
	InstanceTypes []plan.InstanceType  `json:"instance_types,omitempty"`
	// Environment registers an environment's version, or archives one
	// registered (the same, with Archived set).
	Environment *plan.EnvironmentAsset `json:"environment,omitempty"`
}

// Kind says which field of the entry is set, "" when none or several are.
func (e CatalogEntry) Kind() CatalogKind {
	var kinds []CatalogKind
	if e.Datastore != nil {
		kinds = append(kinds, KindDatastore)
	}
	if e.Data != nil {
		kinds = append(kinds, KindData)
	}
	if e.Model != nil {
		kinds = append(kinds, KindModel)
	}
	if e.Component != nil {
		kinds = append(kinds, KindComponent)
	}
	if e.Compute != nil {
		kinds = append(kinds, KindCompute)
	}
	if e.InstanceTypes != nil {
		kinds = append(kinds, KindInstanceType)
	}
	if e.Environment != nil {
		kinds = append(kinds, KindEnvironment)
	}
	if len(kinds) != 1 {
		return ""
	}
	return kinds[0]
}

// RegisterResult says what a registration did.
type RegisterResult struct {
	// Replaced is true when a datastore or compute of the same name was
	// replaced.
	Replaced bool `json:"replaced,omitempty"`
	// ReplacedInstanceTypes names the applied instance types an apply
	// replaced.
	ReplacedInstanceTypes []string `json:"replaced_instance_types,omitempty"`
}

// CatalogRemoval names an entry to remove: a datastore, compute or
// instance type by name, a data asset or component by name and version.
type CatalogRemoval struct {
	Kind    CatalogKind `json:"kind"`
	Name    string      `json:"name"`
	Version string      `json:"version,omitempty"`
}

// CatalogInput starts (or continues) the catalogue workflow.
type CatalogInput struct {
	Catalog plan.Catalog `json:"catalog"`
}

// Catalog is the long-running workflow that holds a namespace's catalogue,
// so that it lives with the server's state. It changes only through the
// register and remove updates, whose validators refuse bad entries before
// they reach history, and continues as new when Temporal suggests it,
// carrying the catalogue.
func Catalog(ctx workflow.Context, in CatalogInput) error {
	cat := in.Catalog
	if err := setQuery(ctx, CatalogQuery, func() (plan.Catalog, error) {
		return cat, nil
	}); err != nil {
		return err
	}
	if err := workflow.SetUpdateHandlerWithOptions(ctx, RegisterUpdate,
		func(_ workflow.Context, e CatalogEntry) (RegisterResult, error) { return registerEntry(&cat, e) },
		workflow.UpdateHandlerOptions{Validator: func(e CatalogEntry) error { return validateEntry(&cat, e) }},
	); err != nil {
		return err
	}
	if err := workflow.SetUpdateHandlerWithOptions(ctx, RemoveUpdate,
		func(_ workflow.Context, r CatalogRemoval) error { return removeEntry(&cat, r) },
		workflow.UpdateHandlerOptions{Validator: func(r CatalogRemoval) error { return findEntry(&cat, r) }},
	); err != nil {
		return err
	}
	// The handlers never block, but an update accepted in the same task as
	// the suggestion must still be applied before the catalogue is carried.
	err := workflow.Await(ctx, func() bool {
		return workflow.GetInfo(ctx).GetContinueAsNewSuggested() && workflow.AllHandlersFinished(ctx)
	})
	if err != nil {
		return err
	}
	return workflow.NewContinueAsNewError(ctx, CatalogName, CatalogInput{Catalog: cat})
}

// validateEntry checks an entry against the catalogue without changing it.
func validateEntry(cat *plan.Catalog, e CatalogEntry) error {
	switch e.Kind() {
	case KindDatastore:
		return validateDatastore(*e.Datastore)
	case KindData:
		return validateAsset(KindData, *e.Data, cat.Data, plan.DataTypes)
	case KindModel:
		return validateAsset(KindModel, *e.Model, cat.Models, plan.ModelTypes)
	case KindComponent:
		c := e.Component
		if err := validateNameVersion("component", c.Name, c.Version); err != nil {
			return err
		}
		if c.Source == "" || !path.IsAbs(c.Dir) {
			return fmt.Errorf("component %q needs its YAML source and the absolute folder it was registered from", c.Name)
		}
		if slices.ContainsFunc(cat.Components, func(x plan.ComponentAsset) bool { return x.Name == c.Name && x.Version == c.Version }) {
			return fmt.Errorf("component %q version %q is already registered and versions are immutable: "+
				"give the new one another version: in its file", c.Name, c.Version)
		}
	case KindCompute:
		return validateCompute(cat, *e.Compute)
	case KindInstanceType:
		return validateInstanceTypes(cat, e.InstanceTypes)
	case KindEnvironment:
		return validateEnvironment(cat, *e.Environment)
	default:
		return errors.New("a catalogue entry must be exactly one of a datastore, a data asset, a model, a component, a compute, instance types or an environment")
	}
	return nil
}

// validateAsset checks a data asset or model (kind) against the versions
// registered (list): versions are immutable.
func validateAsset(kind CatalogKind, a plan.Asset, list []plan.Asset, types []string) error {
	noun := kindNoun(kind)
	if err := validateNameVersion(noun, a.Name, a.Version); err != nil {
		return err
	}
	if !slices.Contains(types, a.Type) {
		return fmt.Errorf("%s %q has type %q: expected %s", noun, a.Name, a.Type, strings.Join(types, ", "))
	}
	if a.Path == "" {
		return fmt.Errorf("%s %q has no path: give its path (a local path or an azureml://datastores/ URI)", noun, a.Name)
	}
	if _, ok := plan.FindAsset(list, a.Name, a.Version); ok {
		return fmt.Errorf("%s %q version %q is already registered and versions are immutable: "+
			"give the new one another version (version: in its file, or --version)", noun, a.Name, a.Version)
	}
	return nil
}

func validateDatastore(d plan.Datastore) error {
	if err := validateName("datastore", d.Name); err != nil {
		return err
	}
	switch d.Type {
	case plan.DatastoreLocal:
		if !path.IsAbs(d.Path) {
			return fmt.Errorf("local datastore %q has path %q: expected an absolute path, the same on every worker", d.Name, d.Path)
		}
	case plan.DatastoreS3:
		if d.Bucket == "" {
			return fmt.Errorf("s3 datastore %q has no bucket: give it one with bucket: <name>", d.Name)
		}
	case plan.DatastoreAzureBlob, plan.DatastoreAzureDataLakeGen2:
		if d.AccountName == "" || d.Container() == "" {
			return fmt.Errorf("%s datastore %q needs an account and a container: give account_name and container_name (filesystem for ADLS Gen2)", d.Type, d.Name)
		}
	default:
		return fmt.Errorf("datastore %q has type %q: porch supports local, s3, azure_blob and azure_data_lake_gen2", d.Name, d.Type)
	}
	return nil
}

func validateNameVersion(what, name, version string) error {
	if err := validateName(what, name); err != nil {
		return err
	}
	if version == "" || version == "latest" || strings.ContainsAny(version, ":@/ \t\n") {
		return fmt.Errorf("%s %q has version %q: expected a version like 1 or 2.0 (not latest, without : @ / or spaces)",
			what, name, version)
	}
	return nil
}

// validateName accepts what Azure ML accepts in asset names: letters,
// digits, '-', '_' and '.', starting with a letter or digit.
func validateName(what, name string) error {
	ok := name != "" && len(name) <= 255
	for i, r := range name {
		alnum := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9'
		if !alnum && (i == 0 || !strings.ContainsRune("-_.", r)) {
			ok = false
		}
	}
	if !ok {
		return fmt.Errorf("%s name %q: expected letters, digits, '-', '_' and '.', starting with a letter or digit", what, name)
	}
	return nil
}

// registerEntry adds a validated entry: a datastore replaces one of the same
// name in place, data assets and components are appended.
func registerEntry(cat *plan.Catalog, e CatalogEntry) (RegisterResult, error) {
	if err := validateEntry(cat, e); err != nil {
		return RegisterResult{}, err
	}
	switch e.Kind() {
	case KindDatastore:
		i := slices.IndexFunc(cat.Datastores, func(x plan.Datastore) bool { return x.Name == e.Datastore.Name })
		if i >= 0 {
			cat.Datastores[i] = *e.Datastore
			return RegisterResult{Replaced: true}, nil
		}
		cat.Datastores = append(cat.Datastores, *e.Datastore)
	case KindData:
		cat.Data = append(cat.Data, *e.Data)
	case KindModel:
		cat.Models = append(cat.Models, *e.Model)
	case KindComponent:
		cat.Components = append(cat.Components, *e.Component)
	case KindCompute:
		return RegisterResult{Replaced: registerCompute(cat, *e.Compute)}, nil
	case KindInstanceType:
		return RegisterResult{ReplacedInstanceTypes: applyInstanceTypes(cat, e.InstanceTypes)}, nil
	case KindEnvironment:
		i := environmentIndex(cat, e.Environment.Name, e.Environment.Version)
		if i >= 0 {
			cat.Environments[i] = *e.Environment
			return RegisterResult{Replaced: true}, nil
		}
		cat.Environments = append(cat.Environments, *e.Environment)
	}
	return RegisterResult{}, nil
}

// validateEnvironment checks an environment's version: it names an image
// or a build context, and versions are immutable but for archiving one.
func validateEnvironment(cat *plan.Catalog, e plan.EnvironmentAsset) error {
	if err := validateNameVersion("environment", e.Name, e.Version); err != nil {
		return err
	}
	if (e.Environment.Image == "") == (e.Environment.Build == nil) {
		return fmt.Errorf("environment %q needs an image: or a build: (and not both)", e.Name)
	}
	if i := environmentIndex(cat, e.Name, e.Version); i >= 0 {
		if !e.Archived || !sameEnvironment(cat.Environments[i], e) {
			return fmt.Errorf("environment %q version %q is already registered and versions are immutable: "+
				"give the new one another version (version: in its file, or --version)", e.Name, e.Version)
		}
	}
	return nil
}

// sameEnvironment says whether two versions of an environment are the
// same but for being archived.
func sameEnvironment(a, b plan.EnvironmentAsset) bool {
	ea, eb := a.Environment, b.Environment
	sameBuild := ea.Build == nil && eb.Build == nil ||
		ea.Build != nil && eb.Build != nil && *ea.Build == *eb.Build
	return a.Name == b.Name && a.Version == b.Version && a.Description == b.Description && sameBuild &&
		ea.Image == eb.Image && ea.Conda == eb.Conda && ea.CondaFile == eb.CondaFile && ea.Ref == eb.Ref
}

// environmentIndex is the index of an environment's version, -1 for none.
func environmentIndex(cat *plan.Catalog, name, version string) int {
	return slices.IndexFunc(cat.Environments, func(x plan.EnvironmentAsset) bool { return x.Name == name && x.Version == version })
}

// findEntry checks that the entry a removal names exists.
func findEntry(cat *plan.Catalog, r CatalogRemoval) error {
	switch r.Kind {
	case KindDatastore:
		if _, ok := cat.FindDatastore(r.Name); !ok {
			return fmt.Errorf("no datastore %q is registered: list them with `porch datastore list`", r.Name)
		}
	case KindData, KindModel, KindComponent:
		if r.Version == "" {
			return fmt.Errorf("removing %s %q needs a version: NAME:VERSION", kindNoun(r.Kind), r.Name)
		}
		if entryIndex(cat, r) < 0 {
			return fmt.Errorf("no %s %q version %q is registered: list them with `porch %s list`",
				kindNoun(r.Kind), r.Name, r.Version, r.Kind)
		}
	case KindCompute, KindInstanceType:
		return findComputeEntry(cat, r)
	default:
		return fmt.Errorf("cannot remove a %q: expected datastore, data, model, component, compute or instance-type", r.Kind)
	}
	return nil
}

// kindNoun is what messages call a kind of entry.
func kindNoun(k CatalogKind) string {
	if k == KindData {
		return "data asset"
	}
	return string(k)
}

// entryIndex is the index of a data asset's, model's or component's
// version, -1 when absent.
func entryIndex(cat *plan.Catalog, r CatalogRemoval) int {
	if list := assetList(cat, r.Kind); list != nil {
		return slices.IndexFunc(*list, func(x plan.Asset) bool { return x.Name == r.Name && x.Version == r.Version })
	}
	return slices.IndexFunc(cat.Components, func(x plan.ComponentAsset) bool { return x.Name == r.Name && x.Version == r.Version })
}

func removeEntry(cat *plan.Catalog, r CatalogRemoval) error {
	if err := findEntry(cat, r); err != nil {
		return err
	}
	switch r.Kind {
	case KindDatastore:
		cat.Datastores = slices.DeleteFunc(cat.Datastores, func(x plan.Datastore) bool { return x.Name == r.Name })
	case KindData, KindModel:
		list := assetList(cat, r.Kind)
		i := entryIndex(cat, r)
		*list = slices.Delete(*list, i, i+1)
	case KindComponent:
		i := entryIndex(cat, r)
		cat.Components = slices.Delete(cat.Components, i, i+1)
	case KindCompute, KindInstanceType:
		removeComputeEntry(cat, r)
	}
	return nil
}

// assetList is the catalogue's list of data assets or models, nil for
// other kinds.
func assetList(cat *plan.Catalog, k CatalogKind) *[]plan.Asset {
	switch k {
	case KindData:
		return &cat.Data
	case KindModel:
		return &cat.Models
	}
	return nil
}
