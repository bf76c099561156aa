// Package redact keeps a worker's secrets out of what leaves a step: its
// logs, its failure messages and the payloads that land in Temporal's
// history. Only a step that runs as identity: managed sees the worker's
// credentials, so only its output can hold them.
package redact

import (
	"bytes"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/porch-pipelines/porch/compiler/plan"
)

// minSecret is the shortest value treated as a secret: shorter ones would
// blank out ordinary words, and are no real credential anyway.
const minSecret = 8

// Mark replaces a secret.
const Mark = "<redacted>"

// Secrets are the worker's secret values a step of this identity sees,
// to keep out of what leaves it: only a managed step sees any.
func Secrets(identity string) []string {
	return Values(os.Environ(), Vars(identity))
}

// Vars name the worker's credential variables whose values are secrets
// and that a step of this identity sees: only a managed step sees any.
func Vars(identity string) []string {
	if identity != plan.JobIdentityManaged {
		return nil
	}
	var out []string
	for _, c := range CredentialVars {
		if c.Secret {
			out = append(out, c.Name)
		}
	}
	return out
}

// Values are the values in env (KEY=VALUE) of the variables names, longest
// first so a secret that contains another goes whole; values shorter than
// 8 bytes are left out.
func Values(env, names []string) []string {
	var out []string
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		if slices.Contains(names, k) && len(v) >= minSecret && !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	slices.SortFunc(out, func(a, b string) int { return len(b) - len(a) })
	return out
}

// Writer writes what it is given to w with every secret replaced. It
// holds back the last bytes that could be the start of a secret cut by a
// write's end until the next write, or Close.
type Writer struct {
	w       io.Writer
	secrets [][]byte
	hold    int
	buf     []byte
}

// NewWriter returns a Writer to w that blanks out secrets.
func NewWriter(w io.Writer, secrets []string) *Writer {
	r := &Writer{w: w}
	for _, s := range secrets {
		r.secrets = append(r.secrets, []byte(s))
		r.hold = max(r.hold, len(s)-1)
	}
	return r
}

// Write writes p, secrets blanked out, but for what may start a secret.
func (r *Writer) Write(p []byte) (int, error) {
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
func (r *Writer) Close() error {
	_, err := r.w.Write(r.buf)
	r.buf = r.buf[:0]
	return err
}

func (r *Writer) replace(b []byte) []byte {
	for _, s := range r.secrets {
		if bytes.Contains(b, s) {
			b = bytes.ReplaceAll(b, s, []byte(Mark))
		}
	}
	return b
}

// String is s with every secret replaced.
func String(s string, secrets []string) string {
	for _, sec := range secrets {
		s = strings.ReplaceAll(s, sec, Mark)
	}
	return s
}

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
