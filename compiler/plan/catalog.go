package plan

// Catalog is what a porch server has registered: datastores, data assets,
// models, components, computes and instance types (porch datastore|data|
// model|component|compute create, porch instance-type apply). The compiler resolves
// azureml:<name>:<version> and azureml:<name>@latest references and
// compute names through it; entries are in registration order.
type Catalog struct {
	Datastores    []Datastore      `json:"datastores,omitempty"`
	Data          []Asset          `json:"data,omitempty"`
	Models        []Asset          `json:"models,omitempty"`
	Components    []ComponentAsset `json:"components,omitempty"`
	Computes      []Compute        `json:"computes,omitempty"`
	InstanceTypes []InstanceType   `json:"instance_types,omitempty"`
	// Environments are registered environments (porch environment create).
	Environments []EnvironmentAsset `json:"environments,omitempty"`
}

// Datastore types.
const (
	DatastoreLocal = "local"
	DatastoreS3    = "s3"
	// DatastoreAzureBlob is a container of an Azure Storage account.
	DatastoreAzureBlob = "azure_blob"
	// DatastoreAzureDataLakeGen2 is a file system of an Azure Data Lake
	// Storage Gen2 account, which porch reaches through its blob API.
	DatastoreAzureDataLakeGen2 = "azure_data_lake_gen2"
)

// ObjectStore says whether the datastore is object storage (s3, Azure
// Blob, ADLS Gen2), which workers reach over the network, rather than a
// folder they see.
func (d Datastore) ObjectStore() bool {
	switch d.Type {
	case DatastoreS3, DatastoreAzureBlob, DatastoreAzureDataLakeGen2:
		return true
	}
	return false
}

// Azure says whether the datastore is Azure Storage.
func (d Datastore) Azure() bool {
	return d.Type == DatastoreAzureBlob || d.Type == DatastoreAzureDataLakeGen2
}

// Container is an Azure datastore's container: container_name, or an
// ADLS Gen2 file system.
func (d Datastore) Container() string {
	if d.Type == DatastoreAzureDataLakeGen2 {
		return d.Filesystem
	}
	return d.ContainerName
}

// Datastore is a registered datastore, or for data named by a wasbs://,
// abfss:// or blob https:// URI, the container it names (Name empty).
// Credentials are never stored: they come from each worker's environment.
type Datastore struct {
	Name        string `json:"name"`
	Type        string `json:"type"`
	Description string `json:"description,omitempty"`
	// Path is a local datastore's folder, the same path on every worker
	// (a disk for one machine, NFS for a fleet).
	Path string `json:"path,omitempty"`
	// Endpoint, Bucket, Prefix and Region are an s3 datastore's.
	// An Azure datastore's Endpoint is the storage's DNS suffix
	// ("core.windows.net" when empty), as in Azure ML.
	Endpoint string `json:"endpoint,omitempty"`
	Bucket   string `json:"bucket,omitempty"`
	Prefix   string `json:"prefix,omitempty"`
	Region   string `json:"region,omitempty"`
	// AccountName, ContainerName and Protocol are an azure_blob
	// datastore's (Protocol https, the default, or http); AccountName and
	// Filesystem an azure_data_lake_gen2 one's.
	AccountName   string `json:"account_name,omitempty"`
	ContainerName string `json:"container_name,omitempty"`
	Filesystem    string `json:"filesystem,omitempty"`
	Protocol      string `json:"protocol,omitempty"`
}

// Asset is one version of a registered data asset or model: both are a
// typed path, as in Azure ML, and differ only in their types.
type Asset struct {
	Name    string `json:"name"`
	Version string `json:"version"`
	// Type is one of DataTypes for a data asset, of ModelTypes for a model.
	Type        string `json:"type"`
	Path        string `json:"path"`
	Description string `json:"description,omitempty"`
}

// DataTypes are the types of data assets, ModelTypes those of models.
var (
	DataTypes  = []string{"uri_file", "uri_folder", "mltable"}
	ModelTypes = []string{"custom_model", "mlflow_model", "triton_model"}
)

// ComponentAsset is one version of a registered component: its YAML as
// registered, and the folder its relative paths (code:) are relative to.
type ComponentAsset struct {
	Name    string `json:"name"`
	Version string `json:"version"`
	Source  string `json:"source"`
	Dir     string `json:"dir"`
}

// FindData returns a data asset's version; "" or "latest" means the one
// registered last.
func (c *Catalog) FindData(name, version string) (Asset, bool) {
	return FindAsset(c.Data, name, version)
}

// FindModel returns a model's version; "" or "latest" means the one
// registered last.
func (c *Catalog) FindModel(name, version string) (Asset, bool) {
	return FindAsset(c.Models, name, version)
}

// FindAsset returns the version of an asset of list; "" or "latest" means
// the one registered last.
func FindAsset(list []Asset, name, version string) (Asset, bool) {
	var found Asset
	ok := false
	for _, d := range list {
		if d.Name == name && (version == d.Version || version == "" || version == "latest") {
			found, ok = d, true
		}
	}
	return found, ok
}

// FindComponent returns a component's version; "" or "latest" means the
// one registered last.
func (c *Catalog) FindComponent(name, version string) (ComponentAsset, bool) {
	var found ComponentAsset
	ok := false
	for _, d := range c.Components {
		if d.Name == name && (version == d.Version || version == "" || version == "latest") {
			found, ok = d, true
		}
	}
	return found, ok
}

// FindDatastore returns a registered datastore.
func (c *Catalog) FindDatastore(name string) (Datastore, bool) {
	for _, d := range c.Datastores {
		if d.Name == name {
			return d, true
		}
	}
	return Datastore{}, false
}
