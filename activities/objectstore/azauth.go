package objectstore

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azidentity"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"

	"github.com/porch-pipelines/porch/compiler/plan"
)

// The Azure Storage settings a worker reads from its environment, as the
// Azure CLI and SDKs do.
const (
	EnvConnectionString = "AZURE_STORAGE_CONNECTION_STRING"
	EnvStorageAccount   = "AZURE_STORAGE_ACCOUNT"
	EnvStorageKey       = "AZURE_STORAGE_KEY"
	EnvStorageSAS       = "AZURE_STORAGE_SAS_TOKEN"
	EnvClientSecret     = "AZURE_CLIENT_SECRET"
)

// DevelopmentAccount and DevelopmentKey are the storage emulator's
// well-known account (Azurite's), which UseDevelopmentStorage=true names.
const (
	DevelopmentAccount = "devstoreaccount1"
	DevelopmentKey     = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
)

type authKind int

const (
	authSharedKey authKind = iota
	authSAS
	authToken
	authAnonymous
)

// azureAuth is how a worker reaches one storage account: the blob service
// URL and the credential, and where both came from.
type azureAuth struct {
	kind authKind
	// endpoint is the blob service URL, ending in "/".
	endpoint string
	account  string
	// from names the setting the credential came from, for messages.
	from  string
	key   string
	sas   string
	token azcore.TokenCredential
}

// describe names the credential in messages, never its value.
func (a azureAuth) describe() string {
	switch a.kind {
	case authSharedKey:
		return "this worker's account key (from " + a.from + ")"
	case authSAS:
		return "this worker's SAS token (from " + a.from + ")"
	case authToken:
		return "this worker's Azure identity (azidentity's DefaultAzureCredential)"
	}
	return "an anonymous request (this worker has no credentials for account " + fmt.Sprintf("%q", a.account) + ")"
}

// refused is the hint for credentials the service refused.
func (a azureAuth) refused() string {
	switch a.kind {
	case authSharedKey:
		return fmt.Sprintf("the service refused %s: check that it is a key of account %q", a.describe(), a.account)
	case authSAS:
		if exp := sasExpiry(a.sas); !exp.IsZero() && time.Now().After(exp) {
			return fmt.Sprintf("the SAS token from %s expired at %s: make a new one", a.from, exp.UTC().Format(time.RFC3339))
		}
		return fmt.Sprintf("the service refused %s: check that it was made for account %q, is signed with its current key and is not outside its start and expiry times", a.describe(), a.account)
	}
	return fmt.Sprintf("the service refused %s: %s", a.describe(), credentialAdvice)
}

// openAzure opens the container of an azure_blob or azure_data_lake_gen2
// datastore, with the credentials this worker's environment gives for its
// account (azureCredentials), and returns the secrets errors must hide.
func openAzure(d plan.Datastore, transport http.RoundTripper) (*azBackend, []string, error) {
	what := "datastore " + fmt.Sprintf("%q", d.Name)
	if d.Name == "" {
		what = "storage URI"
	}
	if d.AccountName == "" || d.Container() == "" {
		return nil, nil, fmt.Errorf("%s has no account or container: give account_name and container_name (filesystem for ADLS Gen2)", what)
	}
	protocol := d.Protocol
	if protocol == "" {
		protocol = "https"
	}
	if protocol != "https" && protocol != "http" {
		return nil, nil, fmt.Errorf("%s has protocol %q: expected https or http", what, protocol)
	}
	suffix := d.Endpoint
	if suffix == "" {
		suffix = "core.windows.net"
	}
	auth, secrets, err := azureCredentials(d.AccountName, protocol, suffix, d.Type == plan.DatastoreAzureDataLakeGen2)
	if err != nil {
		return nil, secrets, fmt.Errorf("%s: %w", what, err)
	}
	opts := &container.ClientOptions{ClientOptions: azcore.ClientOptions{
		// The SDK's retries, bounded so an unreachable endpoint fails an
		// attempt in seconds: porch retries the step's attempt itself.
		Retry: policy.RetryOptions{MaxRetries: 3, RetryDelay: 500 * time.Millisecond, MaxRetryDelay: 4 * time.Second},
	}}
	if transport != nil {
		opts.Transport = &http.Client{Transport: transport}
	}
	u := auth.endpoint + url.PathEscape(d.Container())
	var c *container.Client
	switch auth.kind {
	case authSharedKey:
		cred, kerr := azblob.NewSharedKeyCredential(auth.account, auth.key)
		if kerr != nil {
			return nil, secrets, fmt.Errorf("%s: the account key from %s is not a storage account key (base64): check it", what, auth.from)
		}
		c, err = container.NewClientWithSharedKeyCredential(u, cred, opts)
	case authSAS:
		c, err = container.NewClientWithNoCredential(u+"?"+strings.TrimPrefix(auth.sas, "?"), opts)
	case authToken:
		c, err = container.NewClient(u, auth.token, opts)
	default:
		c, err = container.NewClientWithNoCredential(u, opts)
	}
	if err != nil {
		return nil, secrets, fmt.Errorf("%s: %w", what, err)
	}
	return &azBackend{client: c, auth: auth, container: d.Container(), account: d.AccountName}, secrets, nil
}

// azureCredentials finds this worker's way into account, in the order the
// Azure CLI takes them: AZURE_STORAGE_CONNECTION_STRING when it names the
// account (its BlobEndpoint, or for ADLS Gen2 its DfsEndpoint, replaces
// the default endpoint; UseDevelopmentStorage=true names the emulator's
// account); AZURE_STORAGE_KEY or AZURE_STORAGE_SAS_TOKEN when
// AZURE_STORAGE_ACCOUNT names it; else azidentity's DefaultAzureCredential
// (AZURE_TENANT_ID/AZURE_CLIENT_ID/AZURE_CLIENT_SECRET, workload identity,
// managed identity, az CLI) when it gives a token; else anonymous, for
// public containers.
func azureCredentials(account, protocol, suffix string, dfs bool) (azureAuth, []string, error) {
	auth := azureAuth{account: account, endpoint: fmt.Sprintf("%s://%s.blob.%s/", protocol, account, suffix)}
	secrets := []string{os.Getenv(EnvClientSecret)}
	if raw := os.Getenv(EnvConnectionString); raw != "" {
		secrets = append(secrets, raw)
		cs, err := parseConnectionString(raw)
		if err != nil {
			return auth, secrets, err
		}
		secrets = append(secrets, cs.key, cs.sas, sasSignature(cs.sas))
		if strings.EqualFold(cs.account, account) {
			// Its endpoint holds; without a key or SAS, the credentials
			// come from the settings below.
			if auth = cs.auth(auth, dfs); auth.kind != authAnonymous {
				return auth, secrets, nil
			}
		}
	}
	if strings.EqualFold(os.Getenv(EnvStorageAccount), account) {
		key, sas := os.Getenv(EnvStorageKey), os.Getenv(EnvStorageSAS)
		secrets = append(secrets, key, sas, sasSignature(sas))
		switch {
		case key != "":
			auth.kind, auth.key, auth.from = authSharedKey, key, EnvStorageKey
			return auth, secrets, nil
		case sas != "":
			auth.kind, auth.sas, auth.from = authSAS, sas, EnvStorageSAS
			return auth, secrets, nil
		}
	}
	auth.kind, auth.from = authAnonymous, ""
	if strings.HasPrefix(auth.endpoint, "https://") {
		if cred := identity(); cred != nil {
			auth.kind, auth.token = authToken, cred
		}
	}
	return auth, secrets, nil
}

// sasSignature is a SAS token's signature (sig=), its one secret part.
func sasSignature(sas string) string {
	q, err := url.ParseQuery(strings.TrimPrefix(sas, "?"))
	if err != nil {
		return ""
	}
	return q.Get("sig")
}

// identity is azidentity's DefaultAzureCredential when it gives a storage
// token on this worker, else nil. It asks once per process and set of
// identity variables: probing the managed identity endpoint takes a while
// where there is none.
func identity() azcore.TokenCredential {
	sig := strings.Join([]string{os.Getenv("AZURE_TENANT_ID"), os.Getenv("AZURE_CLIENT_ID"), os.Getenv(EnvClientSecret),
		os.Getenv("AZURE_FEDERATED_TOKEN_FILE"), os.Getenv("AZURE_CLIENT_CERTIFICATE_PATH")}, "\x00")
	identities.mu.Lock()
	defer identities.mu.Unlock()
	if cred, ok := identities.bySig[sig]; ok {
		return cred
	}
	var found azcore.TokenCredential
	cred, err := azidentity.NewDefaultAzureCredential(nil)
	if err == nil {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		_, err = cred.GetToken(ctx, policy.TokenRequestOptions{Scopes: []string{"https://storage.azure.com/.default"}})
		cancel()
		if err == nil {
			found = cred
		}
	}
	if identities.bySig == nil {
		identities.bySig = map[string]azcore.TokenCredential{}
	}
	identities.bySig[sig] = found
	return found
}

var identities struct {
	mu    sync.Mutex
	bySig map[string]azcore.TokenCredential
}

// connectionString is an Azure Storage connection string's parts.
type connectionString struct {
	account, key, sas         string
	blobEndpoint, dfsEndpoint string
	protocol, suffix          string
}

// parseConnectionString reads Key=Value;... pairs (keys in any case), as
// the Azure SDKs do. UseDevelopmentStorage=true is the emulator's account
// on 127.0.0.1:10000 unless BlobEndpoint says otherwise.
func parseConnectionString(s string) (connectionString, error) {
	var cs connectionString
	fields := map[string]string{}
	for _, part := range strings.Split(strings.TrimSpace(s), ";") {
		if strings.TrimSpace(part) == "" {
			continue
		}
		k, v, ok := strings.Cut(part, "=")
		if !ok {
			return cs, fmt.Errorf("%s is not a connection string (Key=Value;Key=Value): a part has no \"=\": check the variable", EnvConnectionString)
		}
		fields[strings.ToLower(strings.TrimSpace(k))] = strings.TrimSpace(v)
	}
	cs = connectionString{account: fields["accountname"], key: fields["accountkey"], sas: fields["sharedaccesssignature"],
		blobEndpoint: fields["blobendpoint"], dfsEndpoint: fields["dfsendpoint"],
		protocol: fields["defaultendpointsprotocol"], suffix: fields["endpointsuffix"]}
	if strings.EqualFold(fields["usedevelopmentstorage"], "true") {
		if cs.account == "" {
			cs.account, cs.key = DevelopmentAccount, DevelopmentKey
		}
		if cs.blobEndpoint == "" {
			cs.blobEndpoint, cs.protocol = "http://127.0.0.1:10000/"+cs.account, "http"
		}
	}
	if cs.account == "" {
		cs.account = accountOfEndpoint(cs.blobEndpoint)
	}
	if cs.account == "" {
		cs.account = accountOfEndpoint(cs.dfsEndpoint)
	}
	if cs.account == "" {
		return cs, fmt.Errorf("%s names no account: give AccountName= (or a BlobEndpoint= whose host or first path segment is the account)", EnvConnectionString)
	}
	return cs, nil
}

// accountOfEndpoint is the account a blob or dfs endpoint names: the first
// label of https://ACCOUNT.blob.core.windows.net, or the first path
// segment of an emulator's http://127.0.0.1:10000/ACCOUNT.
func accountOfEndpoint(endpoint string) string {
	u, err := url.Parse(endpoint)
	if err != nil || u.Host == "" {
		return ""
	}
	if seg, _, _ := strings.Cut(strings.Trim(u.Path, "/"), "/"); seg != "" {
		return seg
	}
	if label, rest, ok := strings.Cut(u.Hostname(), "."); ok && rest != "" {
		return label
	}
	return ""
}

// auth is how a connection string reaches its account; def holds the
// endpoint the account has without one.
func (cs connectionString) auth(def azureAuth, dfs bool) azureAuth {
	a := def
	switch {
	case cs.blobEndpoint != "":
		a.endpoint = cs.blobEndpoint
	case cs.dfsEndpoint != "" && dfs:
		// porch reaches ADLS Gen2 through its blob API: the same account's
		// blob endpoint.
		a.endpoint = strings.Replace(cs.dfsEndpoint, ".dfs.", ".blob.", 1)
	case cs.suffix != "" || cs.protocol != "":
		protocol, suffix := cs.protocol, cs.suffix
		if protocol == "" {
			protocol = "https"
		}
		if suffix == "" {
			suffix = "core.windows.net"
		}
		a.endpoint = fmt.Sprintf("%s://%s.blob.%s", protocol, a.account, suffix)
	}
	a.endpoint = strings.TrimSuffix(a.endpoint, "/") + "/"
	a.from = EnvConnectionString
	switch {
	case cs.key != "":
		a.kind, a.key = authSharedKey, cs.key
	case cs.sas != "":
		a.kind, a.sas = authSAS, cs.sas
	default:
		a.kind = authAnonymous
	}
	return a
}
