package stepio

import (
	"fmt"
	"slices"
	"strings"

	"github.com/porch-pipelines/porch/compiler/plan"
)

// CredentialVar is an environment variable that carries a worker's own
// credentials for clouds and object stores: the worker's identity, as a
// compute's managed identity is a node's in Azure ML. Only a step that runs
// as identity: managed sees them. Secret says the value is itself a secret
// (a key, token or password; an access key id too: with it a secret key is
// half found), blanked out of a managed step's log; the others name files,
// profiles, roles or endpoints. Regions and the like are no credentials and
// stay.
type CredentialVar struct {
	Name   string
	Secret bool
}

// CredentialVars are the worker's credential variables, each marked
// secret or not.
var CredentialVars = []CredentialVar{
	// AWS and S3-compatible stores (what porch's own s3 datastores use).
	{"AWS_ACCESS_KEY_ID", true},
	{"AWS_SECRET_ACCESS_KEY", true},
	{"AWS_SESSION_TOKEN", true},
	{"AWS_SECURITY_TOKEN", true},
	{"AWS_PROFILE", false},
	{"AWS_DEFAULT_PROFILE", false},
	{"AWS_SHARED_CREDENTIALS_FILE", false},
	{"AWS_CONFIG_FILE", false},
	{"AWS_WEB_IDENTITY_TOKEN_FILE", false},
	{"AWS_ROLE_ARN", false},
	{"AWS_ROLE_SESSION_NAME", false},
	{"AWS_CONTAINER_CREDENTIALS_FULL_URI", false},
	{"AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", false},
	{"AWS_CONTAINER_AUTHORIZATION_TOKEN", true},
	{"MINIO_ACCESS_KEY", true},
	{"MINIO_SECRET_KEY", true},
	{"MINIO_ROOT_USER", false},
	{"MINIO_ROOT_PASSWORD", true},
	// Azure: service principals, workload identity, managed identity endpoints, storage keys.
	{"AZURE_CLIENT_ID", false},
	{"AZURE_CLIENT_SECRET", true},
	{"AZURE_TENANT_ID", false},
	{"AZURE_CLIENT_CERTIFICATE_PATH", false},
	{"AZURE_CLIENT_CERTIFICATE_PASSWORD", true},
	{"AZURE_FEDERATED_TOKEN_FILE", false},
	{"AZURE_USERNAME", false},
	{"AZURE_PASSWORD", true},
	{"AZURE_STORAGE_KEY", true},
	{"AZURE_STORAGE_CONNECTION_STRING", true},
	{"AZURE_STORAGE_SAS_TOKEN", true},
	{"IDENTITY_ENDPOINT", false},
	{"IDENTITY_HEADER", true},
	{"MSI_ENDPOINT", false},
	{"MSI_SECRET", true},
	{"DEFAULT_IDENTITY_CLIENT_ID", false},
	// Google Cloud.
	{"GOOGLE_APPLICATION_CREDENTIALS", false},
	{"CLOUDSDK_AUTH_ACCESS_TOKEN_FILE", false},
}

// isCredential says whether an environment variable is a CredentialVar.
func isCredential(name string) bool {
	return slices.ContainsFunc(CredentialVars, func(c CredentialVar) bool { return c.Name == name })
}

// identityEnv is the worker's environment as a step of the given identity
// sees it, and a line for the step's log that names (never shows) what
// was withheld or passed. A managed step keeps the worker's credentials;
// any other loses them. The user who submitted the run is PORCH_USER.
func identityEnv(env []string, identity, user string) ([]string, string) {
	var kept []string
	var creds []string
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		if isCredential(k) {
			creds = append(creds, k)
			if identity != plan.JobIdentityManaged {
				continue
			}
		}
		if k == "PORCH_USER" {
			continue
		}
		kept = append(kept, kv)
	}
	if user != "" {
		kept = append(kept, "PORCH_USER="+user)
	}
	slices.Sort(creds)
	names := strings.Join(creds, ", ")
	switch {
	case identity == plan.JobIdentityManaged && len(creds) > 0:
		return kept, fmt.Sprintf("porch: identity managed: the step runs with this worker's own credentials (%s)", names)
	case identity == plan.JobIdentityManaged:
		return kept, "porch: identity managed: this worker has no credentials of its own in its environment to give the step"
	case len(creds) > 0:
		as := "no identity"
		if identity != "" {
			as = "identity " + identity
		}
		if user != "" {
			as += ", submitted by " + user
		}
		return kept, fmt.Sprintf("porch: %s: the worker's own credentials (%s) are withheld from the step; "+
			"give the step identity: {type: managed} to run with them", as, names)
	case identity == plan.JobIdentityUser && user != "":
		return kept, "porch: identity user_identity: submitted by " + user
	}
	return kept, ""
}
