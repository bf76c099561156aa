package activities

import (
	"fmt"
	"slices"
	"strings"

	"github.com/porch-pipelines/porch/compiler/plan"
)

// credentialVars are the environment variables that carry a worker's own
// credentials for clouds and object stores: the worker's identity, as a
// compute's managed identity is a node's in Azure ML. Only a step that runs
// as identity: managed sees them. Regions, endpoints and the like are not
// credentials and stay.
var credentialVars = []string{
	// AWS and S3-compatible stores (what porch's own s3 datastores use).
	"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_SECURITY_TOKEN",
	"AWS_PROFILE", "AWS_DEFAULT_PROFILE", "AWS_SHARED_CREDENTIALS_FILE", "AWS_CONFIG_FILE",
	"AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_ROLE_ARN", "AWS_ROLE_SESSION_NAME",
	"AWS_CONTAINER_CREDENTIALS_FULL_URI", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "AWS_CONTAINER_AUTHORIZATION_TOKEN",
	"MINIO_ACCESS_KEY", "MINIO_SECRET_KEY", "MINIO_ROOT_USER", "MINIO_ROOT_PASSWORD",
	// Azure: service principals, workload identity, managed identity endpoints, storage keys.
	"AZURE_CLIENT_ID", "AZURE_CLIENT_SECRET", "AZURE_TENANT_ID", "AZURE_CLIENT_CERTIFICATE_PATH",
	"AZURE_CLIENT_CERTIFICATE_PASSWORD", "AZURE_FEDERATED_TOKEN_FILE", "AZURE_USERNAME", "AZURE_PASSWORD",
	"AZURE_STORAGE_KEY", "AZURE_STORAGE_CONNECTION_STRING", "AZURE_STORAGE_SAS_TOKEN",
	"IDENTITY_ENDPOINT", "IDENTITY_HEADER", "MSI_ENDPOINT", "MSI_SECRET", "DEFAULT_IDENTITY_CLIENT_ID",
	// Google Cloud.
	"GOOGLE_APPLICATION_CREDENTIALS", "CLOUDSDK_AUTH_ACCESS_TOKEN_FILE",
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
		if slices.Contains(credentialVars, k) {
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
