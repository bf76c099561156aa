package stepio

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/porch-pipelines/porch/compiler/plan"
)

func TestIdentityEnv(t *testing.T) {
	worker := []string{"PATH=/usr/bin", "AWS_ACCESS_KEY_ID=AKIA1", "AWS_SECRET_ACCESS_KEY=s3cr3t", "AWS_REGION=eu-west-1",
		"AZURE_CLIENT_SECRET=az", "PORCH_USER=mallory"}

	env, note := identityEnv(worker, plan.JobIdentityManaged, "alice@lab")
	assert.Equal(t, []string{"PATH=/usr/bin", "AWS_ACCESS_KEY_ID=AKIA1", "AWS_SECRET_ACCESS_KEY=s3cr3t", "AWS_REGION=eu-west-1",
		"AZURE_CLIENT_SECRET=az", "PORCH_USER=alice@lab"}, env, "managed keeps the worker's credentials; the submitter is the run's")
	assert.Equal(t, "porch: identity managed: the step runs with this worker's own credentials "+
		"(AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AZURE_CLIENT_SECRET)", note)

	for _, id := range []string{"", plan.JobIdentityUser, plan.JobIdentityAMLToken} {
		env, note = identityEnv(worker, id, "alice@lab")
		assert.Equal(t, []string{"PATH=/usr/bin", "AWS_REGION=eu-west-1", "PORCH_USER=alice@lab"}, env, "identity %q", id)
		assert.Contains(t, note, "(AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AZURE_CLIENT_SECRET) are withheld from the step", "identity %q", id)
		assert.NotContains(t, note, "s3cr3t")
	}

	env, note = identityEnv([]string{"PATH=/bin"}, plan.JobIdentityUser, "alice@lab")
	assert.Equal(t, []string{"PATH=/bin", "PORCH_USER=alice@lab"}, env)
	assert.Equal(t, "porch: identity user_identity: submitted by alice@lab", note)
	_, note = identityEnv([]string{"PATH=/bin"}, "", "")
	assert.Empty(t, note, "nothing to say without identity or credentials")
}
