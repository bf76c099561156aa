package objectstore

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/porch-pipelines/porch/activities/objectstore/azuritetest"
	"github.com/porch-pipelines/porch/compiler/plan"
)

// azureStore is an azure_blob datastore on container of Azurite's account,
// with the datastore's endpoint settings; credentials come from the test's
// environment.
func azureStore(account, container string) plan.Datastore {
	return plan.Datastore{Name: "blobs", Type: plan.DatastoreAzureBlob, AccountName: account, ContainerName: container}
}

// roundTrip writes and reads back one object through s.
func roundTrip(t *testing.T, s *Store) {
	t.Helper()
	ctx := context.Background()
	src := filepath.Join(writeTree(t, map[string]string{"a.txt": "alpha"}), "a.txt")
	_, err := s.Upload(ctx, src, "in/a.txt")
	require.NoError(t, err)
	dst := filepath.Join(t.TempDir(), "a.txt")
	require.NoError(t, s.GetFile(ctx, "in/a.txt", dst))
	b, err := os.ReadFile(dst)
	require.NoError(t, err)
	require.Equal(t, "alpha", string(b))
}

// TestAzureCredentialsFromTheEnvironment reads and writes a container with
// each way a worker is given Azure Storage credentials.
func TestAzureCredentialsFromTheEnvironment(t *testing.T) {
	srv, name := azuritetest.Start(t, azuritetest.Account)
	sasToken, err := srv.SAS(azuritetest.Account, name, "rwdlac", time.Now().Add(time.Hour))
	require.NoError(t, err)
	endpoint := "BlobEndpoint=" + srv.Endpoint(azuritetest.Account) + ";"
	for _, c := range []struct {
		name string
		env  map[string]string
	}{
		{"connection string with the account key", map[string]string{EnvConnectionString: srv.ConnectionString(azuritetest.Account)}},
		{"connection string with a SAS", map[string]string{EnvConnectionString: endpoint + "SharedAccessSignature=" + sasToken}},
		{"account and key beside an endpoint-only connection string", map[string]string{
			EnvConnectionString: endpoint, EnvStorageAccount: azuritetest.Account, EnvStorageKey: azuritetest.Key}},
		{"account and SAS token", map[string]string{
			EnvConnectionString: endpoint, EnvStorageAccount: azuritetest.Account, EnvStorageSAS: "?" + sasToken}},
	} {
		t.Run(c.name, func(t *testing.T) {
			noAzureCredentials(t)
			for k, v := range c.env {
				t.Setenv(k, v)
			}
			s, err := Open(azureStore(azuritetest.Account, name))
			require.NoError(t, err)
			roundTrip(t, s)
		})
	}
}

// TestUseDevelopmentStorage reads the emulator's account through
// UseDevelopmentStorage=true, its endpoint given as the Azure CLI takes it.
func TestUseDevelopmentStorage(t *testing.T) {
	srv, name := azuritetest.Start(t, azuritetest.Account)
	noAzureCredentials(t)
	t.Setenv(EnvConnectionString, "UseDevelopmentStorage=true;BlobEndpoint="+srv.Endpoint(azuritetest.Account))
	s, err := Open(azureStore(azuritetest.Account, name))
	require.NoError(t, err)
	roundTrip(t, s)
}

// TestConnectionStringAppliesToItsAccountOnly: a connection string for one
// account gives no endpoint or key to another.
func TestConnectionStringAppliesToItsAccountOnly(t *testing.T) {
	srv, name := azuritetest.Start(t, "porchspare")
	noAzureCredentials(t)
	t.Setenv(EnvConnectionString, srv.ConnectionString(azuritetest.Account))
	s, err := Open(plan.Datastore{Name: "spare", Type: plan.DatastoreAzureBlob, AccountName: "porchspare", ContainerName: name,
		Protocol: "http", Endpoint: "invalid"})
	require.NoError(t, err)
	_, err = s.List(context.Background(), "x")
	require.ErrorContains(t, err, `http://porchspare.blob.invalid/`, "the account's own endpoint, not the connection string's")

	t.Setenv(EnvConnectionString, srv.ConnectionString("porchspare"))
	s, err = Open(plan.Datastore{Name: "spare", Type: plan.DatastoreAzureBlob, AccountName: "porchspare", ContainerName: name})
	require.NoError(t, err)
	roundTrip(t, s)
}

// TestAzureFailuresSayWhatToFix: a wrong key, an expired SAS, a missing
// container and an unreachable endpoint each fail with an error that says
// what to fix, never shows the secret, and (but the endpoint) is
// permanent: trying again cannot help.
func TestAzureFailuresSayWhatToFix(t *testing.T) {
	srv, name := azuritetest.Start(t, azuritetest.Account)
	expired, err := srv.SAS(azuritetest.Account, name, "rwdl", time.Now().Add(-time.Minute))
	require.NoError(t, err)
	wrongKey := strings.Repeat("QUJD", 22) + "QQ=="
	endpoint := "BlobEndpoint=" + srv.Endpoint(azuritetest.Account) + ";"
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	closed := l.Addr().String()
	require.NoError(t, l.Close())
	for _, c := range []struct {
		name, container, conn, want, secret string
		permanent                           bool
	}{
		{"wrong key", name, endpoint + "AccountName=" + azuritetest.Account + ";AccountKey=" + wrongKey,
			`the service refused this worker's account key (from AZURE_STORAGE_CONNECTION_STRING): check that it is a key of account "devstoreaccount1"`, wrongKey, true},
		{"expired SAS", name, endpoint + "SharedAccessSignature=" + expired,
			"the SAS token from AZURE_STORAGE_CONNECTION_STRING expired at ", sasSignature(expired), true},
		{"missing container", "no-such-container", srv.ConnectionString(azuritetest.Account),
			`there is no container "no-such-container" in account "devstoreaccount1": create it, or fix the container's name`, azuritetest.Key, true},
		{"unreachable endpoint", name, "AccountName=" + azuritetest.Account + ";AccountKey=" + azuritetest.Key + ";BlobEndpoint=http://" + closed + "/" + azuritetest.Account,
			"cannot reach http://" + closed + "/devstoreaccount1/: check the endpoint", azuritetest.Key, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			noAzureCredentials(t)
			t.Setenv(EnvConnectionString, c.conn)
			s, err := Open(azureStore(azuritetest.Account, c.container))
			require.NoError(t, err)
			src := filepath.Join(writeTree(t, map[string]string{"a.txt": "a"}), "a.txt")
			_, err = s.Upload(context.Background(), src, "out/a.txt")
			require.Error(t, err)
			require.ErrorContains(t, err, c.want)
			assert.NotContains(t, err.Error(), c.secret)
			var e *Error
			require.ErrorAs(t, err, &e)
			assert.Equal(t, c.permanent, e.Permanent())
		})
	}
}

// TestAzureDirectURIAndContentTags: a direct input's URI is the blob's
// https-style URL without credentials, and a blob written in one request
// is tagged by its Content-MD5, the same when written again unchanged.
func TestAzureDirectURIAndContentTags(t *testing.T) {
	s := openAzurite(t, "")
	ctx := context.Background()
	u, err := s.URI("in/a b.txt")
	require.NoError(t, err)
	assert.Regexp(t, `^http://127\.0\.0\.1:\d+/devstoreaccount1/porch-test-\d+/in/a%20b\.txt$`, u)

	require.NoError(t, s.Put(ctx, "x.txt", strings.NewReader("same"), 4))
	first, err := s.Head(ctx, "x.txt")
	require.NoError(t, err)
	require.NoError(t, s.Put(ctx, "x.txt", strings.NewReader("same"), 4))
	again, err := s.Head(ctx, "x.txt")
	require.NoError(t, err)
	assert.Equal(t, "md5-"+"9b5d1da2b21bfcea0a8d3a2c8f5b9e45"[:0]+first.ETag[4:], first.ETag)
	assert.True(t, strings.HasPrefix(first.ETag, "md5-"), first.ETag)
	assert.Equal(t, first.ETag, again.ETag, "unchanged content, unchanged tag")
	require.NoError(t, s.Put(ctx, "x.txt", strings.NewReader("diff"), 4))
	changed, err := s.Head(ctx, "x.txt")
	require.NoError(t, err)
	assert.NotEqual(t, first.ETag, changed.ETag)
}

func TestParseConnectionString(t *testing.T) {
	for _, c := range []struct {
		in               string
		account, wantURL string
	}{
		{"DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=k;EndpointSuffix=core.chinacloudapi.cn", "acct", "https://acct.blob.core.chinacloudapi.cn/"},
		{"UseDevelopmentStorage=true", DevelopmentAccount, "http://127.0.0.1:10000/devstoreaccount1/"},
		{"BlobEndpoint=https://lake.blob.core.windows.net/;SharedAccessSignature=sv=1&sig=x", "lake", "https://lake.blob.core.windows.net/"},
		{"accountname=Lake;accountkey=k;blobendpoint=http://10.0.0.5:10000/Lake", "Lake", "http://10.0.0.5:10000/Lake/"},
	} {
		cs, err := parseConnectionString(c.in)
		require.NoError(t, err, c.in)
		assert.Equal(t, c.account, cs.account, c.in)
		assert.Equal(t, c.wantURL, cs.auth(azureAuth{account: cs.account}, false).endpoint, c.in)
	}
	// ADLS Gen2 is reached through the blob API: a DfsEndpoint alone
	// names the same account's blob endpoint (an emulator's, which serves
	// both at one address, as it is).
	for in, want := range map[string]string{
		"AccountName=lake;AccountKey=k;DfsEndpoint=https://lake.dfs.core.windows.net/":                  "https://lake.blob.core.windows.net/",
		"DfsEndpoint=https://lake.privatelink.dfs.core.windows.net;AccountName=lake;AccountKey=k":       "https://lake.privatelink.blob.core.windows.net/",
		"AccountName=devstoreaccount1;AccountKey=k;DfsEndpoint=http://127.0.0.1:10000/devstoreaccount1": "http://127.0.0.1:10000/devstoreaccount1/",
		"BlobEndpoint=https://b.example/lake;DfsEndpoint=https://lake.dfs.core.windows.net":             "https://b.example/lake/",
	} {
		cs, err := parseConnectionString(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, cs.auth(azureAuth{account: cs.account}, true).endpoint, in)
	}
	_, err := parseConnectionString("AccountKey=k")
	assert.ErrorContains(t, err, "AZURE_STORAGE_CONNECTION_STRING names no account")
	_, err = parseConnectionString("garbage")
	assert.ErrorContains(t, err, "is not a connection string")
	assert.NotContains(t, err.Error(), "garbage", "a malformed string may hold a secret")
}
