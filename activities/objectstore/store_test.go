package objectstore

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/porch-pipelines/porch/activities/objectstore/azuritetest"
	"github.com/porch-pipelines/porch/activities/objectstore/s3test"
	"github.com/porch-pipelines/porch/compiler/plan"
)

func TestMain(m *testing.M) {
	code := s3test.Main(m)
	azuritetest.Stop()
	os.Exit(code)
}

// noCredentials clears every way a worker finds credentials, so a test
// sets exactly the one it means.
func noCredentials(t *testing.T) {
	for _, k := range []string{"AWS_ACCESS_KEY_ID", "AWS_ACCESS_KEY", "AWS_SECRET_ACCESS_KEY", "AWS_SECRET_KEY",
		"AWS_SESSION_TOKEN", "AWS_PROFILE", "AWS_CONFIG_FILE"} {
		t.Setenv(k, "")
	}
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(t.TempDir(), "absent"))
}

// openMinIO opens a fresh bucket on the test MinIO with env credentials.
func openMinIO(t *testing.T, prefix string) *Store {
	endpoint, access, secret, bucket := s3test.Start(t)
	noCredentials(t)
	t.Setenv("AWS_ACCESS_KEY_ID", access)
	t.Setenv("AWS_SECRET_ACCESS_KEY", secret)
	s, err := Open(plan.Datastore{Name: "lake", Type: plan.DatastoreS3, Endpoint: endpoint, Bucket: bucket, Prefix: prefix})
	require.NoError(t, err)
	return s
}

func TestKey(t *testing.T) {
	noCredentials(t)
	t.Setenv("AWS_ACCESS_KEY_ID", "id")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "secret")
	for _, prefix := range []string{"runs/x", "/runs/x/", "runs//x"} {
		s, err := Open(plan.Datastore{Name: "lake", Type: plan.DatastoreS3, Bucket: "b", Prefix: prefix})
		require.NoError(t, err)
		for p, want := range map[string]string{
			"a/b": "runs/x/a/b", "/a/b/": "runs/x/a/b", "a//./b": "runs/x/a/b", "a/c/../b": "",
		} {
			got, err := s.Key(p)
			if want == "" {
				require.ErrorContains(t, err, `path "a/c/../b" goes up with ".."`)
				continue
			}
			require.NoError(t, err, p)
			require.Equal(t, want, got, "prefix %q path %q", prefix, p)
			name, err := s.Name(p)
			require.NoError(t, err, p)
			require.Equal(t, "a/b", name, "FS's name of %q", p)
		}
		for _, bad := range []string{"..", "../x", `a\..\b`, "", "/", "."} {
			_, err := s.Key(bad)
			require.Error(t, err, "path %q", bad)
			require.Contains(t, err.Error(), `datastore "lake"`)
			_, err = s.Name(bad)
			require.Error(t, err, "path %q", bad)
		}
	}
	s, err := Open(plan.Datastore{Name: "lake", Type: plan.DatastoreS3, Bucket: "b"})
	require.NoError(t, err)
	got, err := s.Key("/out/model.pkl")
	require.NoError(t, err)
	require.Equal(t, "out/model.pkl", got)
}

func TestOpenRefusesBadDefinitions(t *testing.T) {
	noCredentials(t)
	t.Setenv("AWS_ACCESS_KEY_ID", "id")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "secret")
	for _, c := range []struct {
		d    plan.Datastore
		want string
	}{
		{plan.Datastore{Name: "l", Type: plan.DatastoreLocal, Path: "/x"}, `datastore "l" has type "local": only s3, azure_blob and azure_data_lake_gen2 datastores are opened as object stores`},
		{plan.Datastore{Name: "s", Type: plan.DatastoreS3}, `datastore "s" has no bucket`},
		{plan.Datastore{Name: "s", Type: plan.DatastoreS3, Bucket: "b", Endpoint: "127.0.0.1:9000"}, `start it with https:// or http://`},
		{plan.Datastore{Name: "s", Type: plan.DatastoreS3, Bucket: "b", Endpoint: "http://h:9000/bucket"}, `has a path, query or user`},
		{plan.Datastore{Name: "s", Type: plan.DatastoreS3, Bucket: "b", Prefix: "a/../../x"}, `prefix "a/../../x" goes up with ".."`},
	} {
		_, err := Open(c.d)
		require.ErrorContains(t, err, c.want)
	}
}

func TestOpenNeedsCredentials(t *testing.T) {
	noCredentials(t)
	d := plan.Datastore{Name: "lake", Type: plan.DatastoreS3, Bucket: "b"}
	_, err := Open(d)
	require.ErrorContains(t, err, "no s3 credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY")

	t.Setenv("AWS_ACCESS_KEY_ID", "id")
	_, err = Open(d)
	require.ErrorContains(t, err, "only one of AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY is set")

	// A garbled credentials file: the parser would quote the line, secret and all.
	noCredentials(t)
	file := filepath.Join(t.TempDir(), "credentials")
	require.NoError(t, os.WriteFile(file, []byte("[default]\naws_access_key_id = id\nnot-a-key-line s3cr3t-value\n"), 0o600))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", file)
	_, err = Open(d)
	require.ErrorContains(t, err, `cannot read s3 credentials for profile "default" from "`+file+`"`)
	require.NotContains(t, err.Error(), "s3cr3t-value")

	t.Setenv("AWS_PROFILE", "other")
	require.NoError(t, os.WriteFile(file, []byte("[default]\naws_access_key_id = id\naws_secret_access_key = s3cr3t-value\n"), 0o600))
	_, err = Open(d)
	require.ErrorContains(t, err, `check the file has a [other] section`)
	require.NotContains(t, err.Error(), "s3cr3t-value")
}

func TestOpenWithCredentialsFile(t *testing.T) {
	endpoint, access, secret, bucket := s3test.Start(t)
	noCredentials(t)
	file := filepath.Join(t.TempDir(), "credentials")
	ini := "[default]\naws_access_key_id = nobody\naws_secret_access_key = nothing1\n\n[minio]\naws_access_key_id = " + access + "\naws_secret_access_key = " + secret + "\n"
	require.NoError(t, os.WriteFile(file, []byte(ini), 0o600))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", file)
	t.Setenv("AWS_PROFILE", "minio")
	s, err := Open(plan.Datastore{Name: "lake", Type: plan.DatastoreS3, Endpoint: endpoint, Bucket: bucket})
	require.NoError(t, err)
	ok, err := s.Committed(context.Background(), "out")
	require.NoError(t, err)
	require.False(t, ok)

	// The default profile's key is refused by the server.
	t.Setenv("AWS_PROFILE", "")
	s, err = Open(plan.Datastore{Name: "lake", Type: plan.DatastoreS3, Endpoint: endpoint, Bucket: bucket})
	require.NoError(t, err)
	_, err = s.Committed(context.Background(), "out")
	require.ErrorContains(t, err, "the server refused this worker's credentials")
	require.NotContains(t, err.Error(), "nothing1")
}

func TestWrongCredentialsNeverShowTheSecret(t *testing.T) {
	endpoint, access, _, bucket := s3test.Start(t)
	noCredentials(t)
	const secret = "wrong-secret-Zq81xK"
	t.Setenv("AWS_ACCESS_KEY_ID", access)
	t.Setenv("AWS_SECRET_ACCESS_KEY", secret)
	t.Setenv("AWS_SESSION_TOKEN", "token-Ab12Cd34")
	s, err := Open(plan.Datastore{Name: "lake", Type: plan.DatastoreS3, Endpoint: endpoint, Bucket: bucket, Prefix: "p"})
	require.NoError(t, err)
	ctx := context.Background()
	src := filepath.Join(t.TempDir(), "f.txt")
	require.NoError(t, os.WriteFile(src, []byte("x"), 0o644))

	_, err1 := s.Upload(ctx, src, "out/f.txt")
	_, err2 := s.Download(ctx, "out/f.txt", filepath.Join(t.TempDir(), "f"))
	_, err3 := s.Committed(ctx, "out")
	for _, err := range []error{err1, err2, err3} {
		require.Error(t, err)
		msg := err.Error()
		require.Contains(t, msg, `datastore "lake" (bucket "`+bucket+`" at `+endpoint+`)`)
		require.NotContains(t, msg, secret)
		require.NotContains(t, msg, "token-Ab12Cd34")
		require.True(t, strings.Contains(msg, "refused this worker's credentials"), msg)
	}
}

// eachStore runs test on a fresh store of every backend: a bucket of the
// test MinIO and a container of Azurite, both with prefix.
func eachStore(t *testing.T, prefix string, test func(t *testing.T, s *Store)) {
	t.Run("s3", func(t *testing.T) { test(t, openMinIO(t, prefix)) })
	t.Run("azblob", func(t *testing.T) { test(t, openAzurite(t, prefix)) })
}

// noAzureCredentials clears every way a worker finds Azure credentials.
func noAzureCredentials(t *testing.T) {
	for _, k := range []string{EnvConnectionString, EnvStorageAccount, EnvStorageKey, EnvStorageSAS,
		"AZURE_TENANT_ID", "AZURE_CLIENT_ID", EnvClientSecret} {
		t.Setenv(k, "")
	}
}

// openAzurite opens a fresh container of Azurite's account, with the
// account's connection string in the environment.
func openAzurite(t *testing.T, prefix string) *Store {
	srv, name := azuritetest.Start(t, azuritetest.Account)
	noAzureCredentials(t)
	t.Setenv(EnvConnectionString, srv.ConnectionString(azuritetest.Account))
	s, err := Open(plan.Datastore{Name: "lake", Type: plan.DatastoreAzureBlob, AccountName: azuritetest.Account,
		ContainerName: name, Prefix: prefix})
	require.NoError(t, err)
	return s
}
