package deploy

import (
	"bufio"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"go.temporal.io/server/common/config"
)

// readVersions reads versions.env: NAME=VALUE lines.
func readVersions(t *testing.T) map[string]string {
	t.Helper()
	f, err := os.Open("versions.env")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if k, v, ok := strings.Cut(line, "="); ok && !strings.HasPrefix(line, "#") {
			out[k] = v
		}
	}
	return out
}

// requireLine matches a module and its version in go.mod.
var requireLine = regexp.MustCompile(`(?m)^\s*(?:require\s+)?([a-z0-9.\-]+\.[a-z]+/\S+)\s+v(\S+)`)

// TestVersionsFollowGoMod checks versions.env against what porch embeds.
func TestVersionsFollowGoMod(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	embedded := map[string]string{}
	for _, m := range requireLine.FindAllStringSubmatch(string(data), -1) {
		embedded[m[1]] = m[2]
	}
	v := readVersions(t)
	for key, module := range map[string]string{
		"TEMPORAL_SERVER_VERSION":      "go.temporal.io/server",
		"TEMPORAL_ADMIN_TOOLS_VERSION": "go.temporal.io/server",
		"TEMPORAL_UI_VERSION":          "github.com/temporalio/ui-server/v2",
	} {
		if v[key] != embedded[module] {
			t.Errorf("versions.env: %s=%s, but porch embeds %s %s (go.mod): keep them equal", key, v[key], module, embedded[module])
		}
	}
}

// temporalImage matches the Temporal images the files here run.
var temporalImage = regexp.MustCompile(`temporalio/(server|admin-tools|ui):([^\s"']+)`)

// TestImagesFollowVersions checks every Temporal image in docker-compose.yml
// and kubernetes/ against versions.env.
func TestImagesFollowVersions(t *testing.T) {
	v := readVersions(t)
	want := map[string]string{
		"server": v["TEMPORAL_SERVER_VERSION"], "admin-tools": v["TEMPORAL_ADMIN_TOOLS_VERSION"], "ui": v["TEMPORAL_UI_VERSION"],
	}
	files, err := filepath.Glob(filepath.Join("kubernetes", "*", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	more, _ := filepath.Glob(filepath.Join("kubernetes", "*.yaml"))
	files = append(append(files, more...), "docker-compose.yml")
	seen := map[string]bool{}
	for _, name := range files {
		data, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range temporalImage.FindAllStringSubmatch(string(data), -1) {
			seen[m[1]] = true
			if m[2] != want[m[1]] {
				t.Errorf("%s: temporalio/%s:%s; versions.env says %s", name, m[1], m[2], want[m[1]])
			}
		}
	}
	for _, image := range []string{"server", "admin-tools", "ui"} {
		if !seen[image] {
			t.Errorf("no file here runs temporalio/%s", image)
		}
	}
}

// TestTemporalServerConfig loads temporal/config.yaml the way the server
// does (TEMPORAL_SERVER_CONFIG_FILE_PATH, rendered with the environment)
// and validates it.
func TestTemporalServerConfig(t *testing.T) {
	for k, v := range map[string]string{
		"POSTGRES_SEEDS": "postgresql", "POSTGRES_USER": "temporal", "POSTGRES_PWD": "secret",
		"BIND_ON_IP": "0.0.0.0", "TEMPORAL_BROADCAST_ADDRESS": "10.0.0.7",
	} {
		t.Setenv(k, v)
	}
	cfg, err := config.Load(config.WithConfigFile(filepath.Join("temporal", "config.yaml")))
	if err != nil {
		t.Fatalf("temporal/config.yaml: %v", err)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatalf("temporal/config.yaml: %v", err)
	}
	sql := cfg.Persistence.DataStores["default"].SQL
	if sql == nil || sql.ConnectAddr != "postgresql:5432" || sql.Password != "secret" || sql.PluginName != "postgres12" {
		t.Errorf("temporal/config.yaml: default store %+v: want postgres12 at postgresql:5432 with the password from POSTGRES_PWD", sql)
	}
	if got := cfg.ClusterMetadata.ClusterInformation["active"].RPCAddress; got != "10.0.0.7:7233" {
		t.Errorf("temporal/config.yaml: cluster rpcAddress %q, want the broadcast address's 10.0.0.7:7233", got)
	}
	if m := cfg.Global.Metrics; m == nil || m.Prometheus == nil || m.Prometheus.ListenAddress != "0.0.0.0:9090" {
		t.Errorf("temporal/config.yaml: want the server's Prometheus metrics on 0.0.0.0:9090")
	}
}

// TestTemporalServerConfigRefuses checks that temporal/config.yaml refuses,
// when the server loads it and with a message naming the variable, what
// would otherwise fail later: a membership port above 32767 (Temporal keeps
// it in a SMALLINT column, and the server died at start with "value ... is
// out of range for type smallint") and no PostgreSQL host.
func TestTemporalServerConfigRefuses(t *testing.T) {
	for _, c := range []struct {
		env  map[string]string
		want string // "" loads
	}{
		{map[string]string{"HISTORY_MEMBERSHIP_PORT": "40000"}, "HISTORY_MEMBERSHIP_PORT=40000: give a port of 32767 or below"},
		{map[string]string{"FRONTEND_MEMBERSHIP_PORT": "32768"}, "FRONTEND_MEMBERSHIP_PORT=32768: give a port of 32767 or below"},
		{map[string]string{"WORKER_MEMBERSHIP_PORT": "32767", "MATCHING_MEMBERSHIP_PORT": "20000"}, ""},
		{map[string]string{"POSTGRES_SEEDS": ""}, "set POSTGRES_SEEDS to PostgreSQL's host"},
	} {
		t.Setenv("POSTGRES_SEEDS", "postgresql")
		for k, v := range c.env {
			t.Setenv(k, v)
		}
		_, err := config.Load(config.WithConfigFile(filepath.Join("temporal", "config.yaml")))
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%v: %v", c.env, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%v: got %v, want an error with %q", c.env, err, c.want)
		}
		for k := range c.env {
			t.Setenv(k, "")
		}
	}
}
