package cli

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeEnv is a process environment for tests.
type fakeEnv map[string]string

func (e fakeEnv) get(k string) string { return e[k] }

func writeConfig(t *testing.T, home, body string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(home, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(home, "config.yaml"), []byte(body), 0o644))
}

func TestResolveSettingsPrecedence(t *testing.T) {
	home := t.TempDir()
	writeConfig(t, home, "address: config-host:7233\nnamespace: config-ns\n")
	cfgPath := filepath.Join(home, "config.yaml")
	tests := []struct {
		name          string
		env           fakeEnv
		flags         serverFlags
		addr, from    string
		wantNamespace string
	}{
		{"config only", fakeEnv{envHome: home}, serverFlags{}, "config-host:7233", cfgPath, "config-ns"},
		{"environment beats config", fakeEnv{envHome: home, envAddress: "env-host:1", envNamespace: "env-ns"},
			serverFlags{}, "env-host:1", envAddress, "env-ns"},
		{"flags beat environment", fakeEnv{envHome: home, envAddress: "env-host:1", envNamespace: "env-ns"},
			serverFlags{address: "flag-host:2", namespace: "flag-ns"}, "flag-host:2", "--address", "flag-ns"},
		{"address and namespace resolve independently", fakeEnv{envHome: home, envNamespace: "env-ns"},
			serverFlags{address: "flag-host:2"}, "flag-host:2", "--address", "env-ns"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := resolveSettings(tt.env.get, tt.flags)
			require.NoError(t, err)
			assert.Equal(t, home, s.Home)
			assert.Equal(t, tt.addr, s.Address)
			assert.Equal(t, tt.from, s.AddressFrom)
			assert.Equal(t, tt.wantNamespace, s.Namespace)
		})
	}
}

func TestResolveSettingsDefaults(t *testing.T) {
	home := filepath.Join(t.TempDir(), "missing")
	s, err := resolveSettings(fakeEnv{envHome: home}.get, serverFlags{})
	require.NoError(t, err)
	assert.Equal(t, "", s.Address, "no address configured means an embedded server")
	assert.Equal(t, "default", s.Namespace)

	t.Setenv("HOME", "/home/someone")
	s, err = resolveSettings(fakeEnv{}.get, serverFlags{})
	require.NoError(t, err)
	assert.Equal(t, "/home/someone/.porch", s.Home)
}

func TestResolveSettingsRelativeHome(t *testing.T) {
	t.Chdir(t.TempDir())
	s, err := resolveSettings(fakeEnv{envHome: "rel"}.get, serverFlags{})
	require.NoError(t, err)
	assert.True(t, filepath.IsAbs(s.Home), "home %q should be absolute: workers and steps run elsewhere", s.Home)
}

func TestResolveSettingsBadConfig(t *testing.T) {
	home := t.TempDir()
	writeConfig(t, home, "address: [not, a, string]\n")
	_, err := resolveSettings(fakeEnv{envHome: home}.get, serverFlags{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), filepath.Join(home, "config.yaml"))
	assert.Contains(t, err.Error(), "expected the keys address:, namespace: and runtime: at the top")
}

func TestServerSettingsWithoutServer(t *testing.T) {
	home := t.TempDir()
	a := &app{getenv: fakeEnv{envHome: home}.get}
	_, err := a.serverSettings(serverFlags{})
	require.ErrorIs(t, err, errNoServer)
	assert.Contains(t, err.Error(), "porch dev")
	assert.Contains(t, err.Error(), "--address")

	// A record left by a dev server that is gone does not count.
	_, err = writeDevState(home, devState{Address: "127.0.0.1:1", PID: 1})
	require.NoError(t, err)
	_, err = a.serverSettings(serverFlags{})
	require.ErrorIs(t, err, errNoServer)
}

func TestServerSettingsFindsDev(t *testing.T) {
	home := t.TempDir()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	remove, err := writeDevState(home, devState{Address: l.Addr().String(), Namespace: "dev-ns", PID: os.Getpid()})
	require.NoError(t, err)
	a := &app{getenv: fakeEnv{envHome: home}.get}
	s, err := a.serverSettings(serverFlags{})
	require.NoError(t, err)
	assert.Equal(t, l.Addr().String(), s.Address)
	assert.Equal(t, "dev-ns", s.Namespace)

	// A configured address wins over the dev server.
	s, err = a.serverSettings(serverFlags{address: "elsewhere:7233"})
	require.NoError(t, err)
	assert.Equal(t, "elsewhere:7233", s.Address)

	remove()
	assert.NoFileExists(t, devStatePath(home))
}

// TestDevStateIsPrivate checks that dev.json, which tells where to reach
// a server that runs commands as its user, is readable by that user only:
// written so, and tightened when an earlier porch left it 0644.
func TestDevStateIsPrivate(t *testing.T) {
	old := syscall.Umask(0o022)
	defer syscall.Umask(old)
	home := t.TempDir()
	_, err := writeDevState(home, devState{Address: "127.0.0.1:1", PID: 1})
	require.NoError(t, err)
	st, err := os.Stat(devStatePath(home))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), st.Mode().Perm(), "a new dev.json")

	require.NoError(t, os.Chmod(devStatePath(home), 0o644))
	_, err = writeDevState(home, devState{Address: "127.0.0.1:2", PID: 2})
	require.NoError(t, err)
	st, err = os.Stat(devStatePath(home))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), st.Mode().Perm(), "a dev.json that was 0644")
}

func TestParseSet(t *testing.T) {
	set, err := parseSet([]string{"inputs.n=3", "inputs.msg=a=b", "inputs.empty=", "settings.force_rerun=True", "inputs.n=4"})
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"inputs.n": "4", "inputs.msg": "a=b", "inputs.empty": "", "settings.force_rerun": "True"}, set,
		"a key given twice takes its last value")

	_, err = parseSet([]string{"inputs.n"})
	require.Error(t, err)
	assert.True(t, strings.Contains(err.Error(), "expected KEY=VALUE, with KEY one of inputs.NAME, "), err.Error())
}

func TestNormaliseComputes(t *testing.T) {
	assert.Equal(t, []string{"gpu", "cpu", "", ""},
		normaliseComputes([]string{"azureml:gpu", "cpu", "serverless", "local"}))
}
