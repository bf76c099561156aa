package cli

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/spf13/cobra"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const profilesTOML = `
[profile.default]
address = "default-host:7233"

[profile.prod]
address = "prod-host:7233"
namespace = "prod-ns"
[profile.prod.tls]
client_cert_path = "/certs/client.pem"
client_key_path = "/certs/client.key"
server_ca_cert_path = "/certs/ca.pem"
server_name = "temporal.prod"
`

// profileEnv is an environment with a porch home holding config.yaml and
// a Temporal client config file holding profilesTOML.
func profileEnv(t *testing.T, configYAML string) (env fakeEnv, tomlPath, cfgPath string) {
	t.Helper()
	dir := t.TempDir()
	home := filepath.Join(dir, "porch")
	if configYAML != "" {
		writeConfig(t, home, configYAML)
	}
	tomlPath = filepath.Join(dir, "temporal.toml")
	require.NoError(t, os.WriteFile(tomlPath, []byte(profilesTOML), 0o644))
	return fakeEnv{envHome: home, envConfigFile: tomlPath}, tomlPath, filepath.Join(home, "config.yaml")
}

func TestResolveSettingsProfilePrecedence(t *testing.T) {
	env, file, cfgPath := profileEnv(t, "address: config-host:7233\nnamespace: config-ns\n")
	prod := func(key string) string { return profileOrigin(key, "prod", file) }
	with := func(kv ...string) fakeEnv {
		e := fakeEnv{}
		for k, v := range env {
			e[k] = v
		}
		for i := 0; i < len(kv); i += 2 {
			e[kv[i]] = kv[i+1]
		}
		return e
	}
	tests := []struct {
		name           string
		env            fakeEnv
		flags          serverFlags
		addr, from, ns string
		ca, caFrom     string
	}{
		{"the default profile beats config.yaml", env, serverFlags{},
			"default-host:7233", profileOrigin("address", "default", file), "config-ns", "", ""},
		{"--profile", env, serverFlags{profile: "prod"},
			"prod-host:7233", prod("address"), "prod-ns", "/certs/ca.pem", prod("tls.server_ca_cert_path")},
		{"TEMPORAL_PROFILE", with(envProfile, "prod"), serverFlags{},
			"prod-host:7233", prod("address"), "prod-ns", "/certs/ca.pem", prod("tls.server_ca_cert_path")},
		{"--profile beats TEMPORAL_PROFILE", with(envProfile, "nope"), serverFlags{profile: "prod"},
			"prod-host:7233", prod("address"), "prod-ns", "/certs/ca.pem", prod("tls.server_ca_cert_path")},
		{"variables beat the profile", with(envAddress, "env-host:1", setCA.env, "/env/ca.pem"), serverFlags{profile: "prod"},
			"env-host:1", envAddress, "prod-ns", "/env/ca.pem", setCA.env},
		{"flags beat variables", with(envAddress, "env-host:1", setCA.env, "/env/ca.pem"),
			serverFlags{profile: "prod", address: "flag-host:2", tlsCA: "/flag/ca.pem"},
			"flag-host:2", "--address", "prod-ns", "/flag/ca.pem", "--tls-ca-path"},
		{"an empty variable is unset", with(envAddress, ""), serverFlags{profile: "prod"},
			"prod-host:7233", prod("address"), "prod-ns", "/certs/ca.pem", prod("tls.server_ca_cert_path")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := resolveSettings(tt.env.get, tt.flags)
			require.NoError(t, err)
			assert.Equal(t, tt.addr, s.Address)
			assert.Equal(t, tt.from, s.AddressFrom)
			assert.Equal(t, tt.ns, s.Namespace)
			if tt.ca == "" {
				assert.Nil(t, s.conn.TLS)
				return
			}
			require.NotNil(t, s.conn.TLS)
			assert.Equal(t, tt.ca, s.conn.TLS.ServerCACertPath)
			assert.Equal(t, tt.caFrom, s.from.of(setCA))
			assert.Equal(t, "/certs/client.pem", s.conn.TLS.ClientCertPath)
		})
	}

	// config.yaml still counts when no profile names an address.
	env[envConfigFile] = filepath.Join(t.TempDir(), "absent.toml")
	s, err := resolveSettings(env.get, serverFlags{})
	require.NoError(t, err)
	assert.Equal(t, "config-host:7233", s.Address)
	assert.Equal(t, cfgPath, s.AddressFrom)
}

func TestResolveSettingsTLSFromVariablesAndFlags(t *testing.T) {
	env := fakeEnv{envHome: t.TempDir(), envConfigFile: filepath.Join(t.TempDir(), "absent.toml"),
		envAddress: "h:1", setCert.env: "/c.pem", setKey.env: "/k.pem", "TEMPORAL_API_KEY": "sekret"}
	s, err := resolveSettings(env.get, serverFlags{})
	require.NoError(t, err)
	require.NotNil(t, s.conn.TLS, "a client certificate turns TLS on")
	assert.False(t, s.conn.TLS.Disabled)
	assert.Equal(t, "/c.pem", s.conn.TLS.ClientCertPath)
	assert.Equal(t, setKey.env, s.from.of(setKey))
	assert.Equal(t, "sekret", s.conn.APIKey)

	s, err = resolveSettings(env.get, serverFlags{tls: optionalBool{set: true}, tlsServerName: "n", apiKey: "other"})
	require.NoError(t, err)
	assert.True(t, s.conn.TLS.Disabled, "--tls=false turns TLS off")
	assert.Equal(t, "n", s.conn.TLS.ServerName)
	assert.Equal(t, "other", s.conn.APIKey)
	assert.Equal(t, "--api-key", s.from.of(setAPIKey))

	// porch's own servers have no TLS, whatever the variables say.
	local := s.local("127.0.0.1:7233", "porch dev")
	assert.Nil(t, local.conn.TLS)
	assert.Empty(t, local.conn.APIKey)
	assert.Equal(t, "porch dev", local.AddressFrom)
}

func TestResolveSettingsInlinePEM(t *testing.T) {
	file := filepath.Join(t.TempDir(), "temporal.toml")
	require.NoError(t, os.WriteFile(file, []byte("[profile.p.tls]\nserver_ca_cert_data = \"PEM\"\n"), 0o644))
	env := fakeEnv{envHome: t.TempDir(), envConfigFile: file}
	s, err := resolveSettings(env.get, serverFlags{profile: "p"})
	require.NoError(t, err)
	assert.Equal(t, profileOrigin("tls.server_ca_cert_data", "p", file), s.from.of(setCA))

	env["TEMPORAL_TLS_SERVER_CA_CERT_DATA"] = "PEM2"
	s, err = resolveSettings(env.get, serverFlags{profile: "p"})
	require.NoError(t, err)
	assert.Equal(t, "TEMPORAL_TLS_SERVER_CA_CERT_DATA", s.from.of(setCA))
	assert.Equal(t, "PEM2", string(s.conn.TLS.ServerCACertData))
}

func TestResolveSettingsNoAddressIsEmbedded(t *testing.T) {
	// TLS settings without an address configure no server.
	env := fakeEnv{envHome: t.TempDir(), envConfigFile: filepath.Join(t.TempDir(), "absent.toml"), setCA.env: "/ca.pem"}
	s, err := resolveSettings(env.get, serverFlags{tlsCert: "/c.pem"})
	require.NoError(t, err)
	assert.Empty(t, s.Address)
	assert.Equal(t, "default", s.Namespace)
}

func TestResolveSettingsProfileErrors(t *testing.T) {
	env, file, _ := profileEnv(t, "")
	_, err := resolveSettings(env.get, serverFlags{profile: "staging"})
	require.Error(t, err)
	assert.Equal(t, `profile "staging" (from --profile) is not in `+file+`, which has default, prod`, err.Error())

	env[envConfigFile] = filepath.Join(t.TempDir(), "absent.toml")
	env[envProfile] = "prod"
	_, err = resolveSettings(env.get, serverFlags{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), `profile "prod" (from TEMPORAL_PROFILE): `+env[envConfigFile]+" has no profiles")

	bad := filepath.Join(t.TempDir(), "bad.toml")
	require.NoError(t, os.WriteFile(bad, []byte("[profile.prod]\naddress = \n"), 0o644))
	env[envConfigFile] = bad
	_, err = resolveSettings(env.get, serverFlags{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "temporal client config "+bad+":")
	assert.Contains(t, err.Error(), "line 2")
}

func TestServerFlagsParse(t *testing.T) {
	var f serverFlags
	cmd := &cobra.Command{Use: "x"}
	f.register(cmd)
	require.NoError(t, cmd.ParseFlags([]string{"--profile", "prod", "--tls", "--tls-cert-path", "c.pem",
		"--tls-key-path", "k.pem", "--tls-ca-path", "ca.pem", "--tls-server-name", "srv", "--api-key", "k"}))
	assert.Equal(t, serverFlags{profile: "prod", tls: optionalBool{set: true, value: true}, tlsCert: "c.pem", tlsKey: "k.pem",
		tlsCA: "ca.pem", tlsServerName: "srv", apiKey: "k"}, f)

	f = serverFlags{}
	cmd = &cobra.Command{Use: "x"}
	f.register(cmd)
	require.NoError(t, cmd.ParseFlags([]string{"--tls=false"}))
	assert.Equal(t, optionalBool{set: true, value: false}, f.tls)
	assert.Error(t, cmd.ParseFlags([]string{"--tls=maybe"}))
}

func TestConnectFlags(t *testing.T) {
	env, _, _ := profileEnv(t, "")
	tests := []struct {
		name  string
		env   fakeEnv
		flags serverFlags
		want  string
	}{
		{"a named profile", env, serverFlags{profile: "prod"}, "--profile prod"},
		{"a named profile and another address", env, serverFlags{profile: "prod", address: "h:1"}, "--profile prod --address h:1"},
		{"the default profile applies unasked", env, serverFlags{}, "--address default-host:7233"},
		{"TLS flags, never the API key", env, serverFlags{address: "h:1", tls: optionalBool{set: true, value: true},
			tlsCA: "/ca.pem", apiKey: "sekret"}, "--address h:1 --tls=true --tls-ca-path=/ca.pem"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := resolveSettings(tt.env.get, tt.flags)
			require.NoError(t, err)
			assert.Equal(t, tt.want, s.connectFlags())
		})
	}
}
