package redact

import (
	"bytes"
	"testing"

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
		r := NewWriter(&out, secrets)
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
	assert.Equal(t, []string{"a-long-secret-key"}, Secrets("managed"), "ids under 8 bytes and profiles are no secrets")
	assert.Empty(t, Secrets(""), "a step without the credentials has nothing to hide")
	assert.Empty(t, Secrets("user_identity"))
}

func TestStringBlanksEverySecret(t *testing.T) {
	secrets := []string{"s3cr3t-value-long", "AKIAEXAMPLE"}
	assert.Equal(t, "raise ValueError(<redacted> and <redacted>)", String("raise ValueError(s3cr3t-value-long and AKIAEXAMPLE)", secrets))
	assert.Equal(t, "nothing to hide", String("nothing to hide", nil))
}
