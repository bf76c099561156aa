package cli

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/porch-pipelines/porch/compiler/plan"
)

var (
	// azureAccountName is a storage account's name, as Azure allows it.
	azureAccountName = regexp.MustCompile(`^[a-z0-9]{3,24}$`)
	// azureContainerName is a container's (or file system's) name.
	azureContainerName = regexp.MustCompile(`^(\$root|[a-z0-9](-?[a-z0-9])*)$`)
)

// azureProtocols maps a datastore's protocol: to the scheme porch reaches
// the blob endpoint with: Azure ML takes the URI schemes too.
var azureProtocols = map[string]string{"https": "https", "wasbs": "https", "abfss": "https",
	"http": "http", "wasb": "http", "abfs": "http"}

// azureDatastore reads an azure_blob or azure_data_lake_gen2 datastore's
// keys as Azure ML's schemas name them. Its credentials: are read past, not
// stored: one warning says where each worker takes them instead.
func (f *catalogFile) azureDatastore(d *plan.Datastore) error {
	blob := d.Type == plan.DatastoreAzureBlob
	container, containerKey := &d.ContainerName, "container_name"
	if !blob {
		container, containerKey = &d.Filesystem, "filesystem"
	}
	f.checkKeys([]string{"$schema", "name", "type", "description", "tags", "account_name", containerKey,
		"endpoint", "protocol", "credentials"})
	var err error
	if d.AccountName, err = f.required("account_name", "the storage account's name"); err != nil {
		return err
	}
	if !azureAccountName.MatchString(d.AccountName) {
		return f.errorf(f.keys["account_name"], "account_name %q is not a storage account name: 3 to 24 lower-case letters and digits", d.AccountName)
	}
	if *container, err = f.required(containerKey, "the "+strings.ReplaceAll(containerKey, "_name", "")+"'s name"); err != nil {
		return err
	}
	if len(*container) < 3 || len(*container) > 63 || !azureContainerName.MatchString(*container) {
		return f.errorf(f.keys[containerKey], "%s %q is not a container name: 3 to 63 lower-case letters, digits and single hyphens, starting and ending with a letter or digit", containerKey, *container)
	}
	var protocol string
	if err := f.strs(map[string]*string{"endpoint": &d.Endpoint, "protocol": &protocol}); err != nil {
		return err
	}
	if strings.Contains(d.Endpoint, "/") {
		return f.errorf(f.keys["endpoint"], "endpoint %q is a URL: give the storage's DNS suffix, like core.windows.net (an emulator's or private endpoint's URL goes in each worker's AZURE_STORAGE_CONNECTION_STRING)", d.Endpoint)
	}
	if protocol != "" {
		scheme, ok := azureProtocols[strings.ToLower(protocol)]
		if !ok {
			return f.errorf(f.keys["protocol"], "protocol %q: expected https (the default), wasbs, abfss or http", protocol)
		}
		if scheme != "https" {
			d.Protocol = scheme
		}
	}
	return f.azureCredentials(*d)
}

// azureCredentials warns, once, that a datastore file's credentials: are
// not stored, and says where each worker takes them. It never repeats a
// value.
func (f *catalogFile) azureCredentials(d plan.Datastore) error {
	creds, ok := f.keys["credentials"]
	if !ok || creds.Tag == "!!null" {
		return nil
	}
	if creds.Kind != yaml.MappingNode {
		return f.errorf(creds, "credentials: expected a mapping (account_key, sas_token, or tenant_id, client_id and client_secret), found a %s", nodeKind(creds))
	}
	var keys []string
	for i := 0; i < len(creds.Content); i += 2 {
		keys = append(keys, strings.ToLower(creds.Content[i].Value))
	}
	var instead string
	switch {
	case slices.Contains(keys, "account_key"):
		instead = fmt.Sprintf("AZURE_STORAGE_ACCOUNT=%s with AZURE_STORAGE_KEY, or AZURE_STORAGE_CONNECTION_STRING with AccountName=%s;AccountKey=...", d.AccountName, d.AccountName)
	case slices.Contains(keys, "sas_token"):
		instead = fmt.Sprintf("AZURE_STORAGE_ACCOUNT=%s with AZURE_STORAGE_SAS_TOKEN, or AZURE_STORAGE_CONNECTION_STRING with AccountName=%s;SharedAccessSignature=...", d.AccountName, d.AccountName)
	case slices.Contains(keys, "client_secret") || slices.Contains(keys, "client_id"):
		instead = "AZURE_TENANT_ID, AZURE_CLIENT_ID and AZURE_CLIENT_SECRET (a service principal allowed to read and write the storage)"
	default:
		instead = "AZURE_STORAGE_CONNECTION_STRING, AZURE_STORAGE_ACCOUNT with AZURE_STORAGE_KEY or AZURE_STORAGE_SAS_TOKEN, or an Azure identity"
	}
	f.warnings = append(f.warnings, fmt.Sprintf("%s:%d: warning: credentials are not registered: porch never stores a secret; "+
		"each worker takes them from its own environment instead: %s (see docs/azure-storage.md)",
		f.name, f.keyNodes["credentials"].Line, instead))
	return nil
}
