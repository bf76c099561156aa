package command

import (
	"bytes"
	"io"
	"os"
	"slices"

	"github.com/porch-pipelines/porch/activities/stepio"
	"github.com/porch-pipelines/porch/compiler/plan"
)

// minSecret is the shortest value treated as a secret: shorter ones would
// blank out ordinary words, and are no real credential anyway.
const minSecret = 8

// redacted replaces a secret in a log.
const redacted = "<redacted>"

// stepSecrets are the worker's secret values a step of this identity sees,
// to keep out of its log: only a managed step sees any.
func stepSecrets(identity string) []string {
	if identity != plan.JobIdentityManaged {
		return nil
	}
	var out []string
	for _, c := range stepio.CredentialVars {
		if v := os.Getenv(c.Name); c.Secret && len(v) >= minSecret && !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	// Longest first, so a secret that contains another goes whole.
	slices.SortFunc(out, func(a, b string) int { return len(b) - len(a) })
	return out
}

// redactor writes what it is given to w with every secret replaced. It
// holds back the last bytes that could be the start of a secret cut by a
// write's end until the next write, or Close.
type redactor struct {
	w       io.Writer
	secrets [][]byte
	hold    int
	buf     []byte
}

func newRedactor(w io.Writer, secrets []string) *redactor {
	r := &redactor{w: w}
	for _, s := range secrets {
		r.secrets = append(r.secrets, []byte(s))
		r.hold = max(r.hold, len(s)-1)
	}
	return r
}

func (r *redactor) Write(p []byte) (int, error) {
	r.buf = r.replace(append(r.buf, p...))
	if n := len(r.buf) - r.hold; n > 0 {
		if _, err := r.w.Write(r.buf[:n]); err != nil {
			return 0, err
		}
		r.buf = append(r.buf[:0], r.buf[n:]...)
	}
	return len(p), nil
}

// Close writes what is held back.
func (r *redactor) Close() error {
	_, err := r.w.Write(r.buf)
	r.buf = r.buf[:0]
	return err
}

func (r *redactor) replace(b []byte) []byte {
	for _, s := range r.secrets {
		if bytes.Contains(b, s) {
			b = bytes.ReplaceAll(b, s, []byte(redacted))
		}
	}
	return b
}
