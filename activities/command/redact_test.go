package command

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// A secret is blanked out however the writes cut it, and nothing else is
// changed or lost.
func TestRedactorAcrossWrites(t *testing.T) {
	secrets := []string{"s3cr3t-value-long", "AKIAEXAMPLE"}
	text := "id=AKIAEXAMPLE key=s3cr3t-value-long\nnot s3cr3t-valu alone\nend AKIAEXAMPLE"
	want := "id=<redacted> key=<redacted>\nnot s3cr3t-valu alone\nend <redacted>"
	for size := 1; size <= len(text); size++ {
		var out bytes.Buffer
		r := newRedactor(&out, secrets)
		for i := 0; i < len(text); i += size {
			_, err := r.Write([]byte(text[i:min(i+size, len(text))]))
			assert.NoError(t, err)
		}
		assert.NoError(t, r.Close())
		assert.Equal(t, want, out.String(), "writes of %d bytes", size)
	}
}

func TestStepSecretsOnlyForManagedSteps(t *testing.T) {
	t.Setenv("AWS_SECRET_ACCESS_KEY", "a-long-secret-key")
	t.Setenv("AWS_ACCESS_KEY_ID", "short")
	t.Setenv("AWS_PROFILE", "default-profile")
	assert.Equal(t, []string{"a-long-secret-key"}, stepSecrets("managed"), "ids under 8 bytes and profiles are no secrets")
	assert.Empty(t, stepSecrets(""), "a step without the credentials has nothing to hide")
	assert.Empty(t, stepSecrets("user_identity"))
}

// A managed step that prints the worker's credentials leaves them in
// neither its log nor its failure's tail.
func TestManagedStepOutputIsRedacted(t *testing.T) {
	dir := t.TempDir()
	spec := procSpec{
		line:    `echo "key=$K"; echo "err=$K" >&2; exit 3`,
		dir:     dir,
		env:     []string{"K=the-worker-secret", "PATH=/usr/bin:/bin"},
		log:     dir + "/std_log.txt",
		secrets: []string{"the-worker-secret"},
	}
	res, err := runProcess(t.Context(), spec, time.Second)
	assert.NoError(t, err)
	assert.Equal(t, 3, res.state.ExitCode())
	log := readFile(t, spec.log)
	assert.Contains(t, log, "key=<redacted>\n")
	assert.Contains(t, log, "err=<redacted>\n")
	assert.NotContains(t, log, "the-worker-secret")
	assert.Equal(t, "err=<redacted>", strings.Join(res.tail, "|"))
}
