package plan

// Identities a job runs as (a job's identity.type), as Azure ML spells them.
// "" is a job that names none: Azure ML then uses the datastore's
// credentials, and porch gives the step none of the worker's.
const (
	// JobIdentityUser runs the job as the user who submitted it: porch
	// records who that was, and the step sees none of the worker's own
	// credentials.
	JobIdentityUser = "user_identity"
	// JobIdentityManaged runs the job as the compute's managed identity:
	// in porch the worker's own credentials, which the step then sees.
	JobIdentityManaged = "managed"
	// JobIdentityAMLToken is Azure ML's workspace token; porch treats it as
	// naming none.
	JobIdentityAMLToken = "aml_token"
)

// JobIdentity is the identity the step's processes run as: a command's,
// a sweep trial's or a parallel step's; "" for none or a pipeline step.
func (s Step) JobIdentity() string {
	switch {
	case s.Command != nil:
		return s.Command.Identity
	case s.Parallel != nil:
		return s.Parallel.Identity
	}
	return ""
}

// JobIdentities lists the identity types a job may name, as written.
// managed_identity is Azure ML's other spelling of managed.
var JobIdentities = []string{JobIdentityUser, JobIdentityManaged, "managed_identity", JobIdentityAMLToken}
