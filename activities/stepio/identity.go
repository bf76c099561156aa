package stepio

import (
	"fmt"
	"slices"
	"strings"

	"github.com/porch-pipelines/porch/activities/redact"
	"github.com/porch-pipelines/porch/compiler/plan"
)

// isCredential says whether an environment variable is a CredentialVar.
func isCredential(name string) bool {
	return slices.ContainsFunc(redact.CredentialVars, func(c redact.CredentialVar) bool { return c.Name == name })
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
