package cli

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/contrib/envconfig"
	"go.yaml.in/yaml/v3"

	"github.com/porch-pipelines/porch/internal/userfile"
)

// Environment variables porch reads.
const (
	envHome      = "PORCH_HOME"
	envAddress   = "TEMPORAL_ADDRESS"
	envNamespace = "TEMPORAL_NAMESPACE"
	// envUser names who submits runs where the login name does not (a
	// shared account, CI): "alice@example.com".
	envUser = "PORCH_USER"
)

const defaultNamespace = "default"

// fileConfig is $PORCH_HOME/config.yaml.
type fileConfig struct {
	Address   string `yaml:"address"`
	Namespace string `yaml:"namespace"`
	// Runtime is the default of --runtime: auto, podman, docker or host.
	Runtime string `yaml:"runtime"`
}

// settings is where porch keeps its files and which Temporal server it
// talks to.
type settings struct {
	// Home is porch's folder: config.yaml, logs/, datastores/, work/.
	Home string
	// Address is the Temporal frontend host:port; "" when none is
	// configured (porch run then embeds a server).
	Address string
	// AddressFrom says where Address came from, for messages.
	AddressFrom string
	Namespace   string
	// conn is the rest of how to connect (TLS, API key), from flags,
	// TEMPORAL_* variables or a Temporal client profile; its Address and
	// Namespace are not used. Zero for porch's own servers, which have
	// neither.
	conn envconfig.ClientConfigProfile
	// from says where each connection setting came from, for messages.
	from origins
	// profile is the Temporal client profile asked for by name, "" for
	// none (the "default" one applies unasked).
	profile string
	// Metrics is the client's metrics handler (--metrics-address); nil
	// records none.
	Metrics client.MetricsHandler
}

// resolveHome returns PORCH_HOME, else ~/.porch.
func resolveHome(getenv func(string) string) (string, error) {
	if h := getenv(envHome); h != "" {
		return filepath.Abs(h)
	}
	dir, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("cannot find a home folder for porch's files: set %s", envHome)
	}
	return filepath.Join(dir, ".porch"), nil
}

// resolveSettings applies the precedence flags, then TEMPORAL_*
// variables, then the Temporal client profile, then config.yaml, setting by
// setting.
func resolveSettings(getenv func(string) string, flags serverFlags) (settings, error) {
	home, err := resolveHome(getenv)
	if err != nil {
		return settings{}, err
	}
	cfgPath := filepath.Join(home, "config.yaml")
	cfg, err := readConfig(cfgPath)
	if err != nil {
		return settings{}, err
	}
	prof, from, named, err := loadProfile(getenv, flags.profile)
	if err != nil {
		return settings{}, err
	}
	if err := applyEnv(getenv, &prof, from); err != nil {
		return settings{}, err
	}
	flags.apply(&prof, from)
	s := settings{Home: home, Address: prof.Address, Namespace: prof.Namespace, conn: prof, from: from, profile: named}
	if s.Address == "" && cfg.Address != "" {
		s.Address, from[setAddress.flag] = cfg.Address, cfgPath
	}
	if s.Namespace == "" {
		s.Namespace = cmp.Or(cfg.Namespace, defaultNamespace)
	}
	s.AddressFrom = from.of(setAddress)
	return s, nil
}

// local makes s the settings of a porch server at addr (embedded or porch
// dev), which has no TLS and no API key, whatever the profile or the
// variables say.
func (s settings) local(addr, from string) settings {
	s.Address, s.AddressFrom = addr, from
	s.conn, s.profile = envconfig.ClientConfigProfile{}, ""
	s.from = origins{setAddress.flag: from}
	return s
}

// readConfig reads config.yaml; a missing file is an empty config.
func readConfig(path string) (fileConfig, error) {
	var cfg fileConfig
	data, err := userfile.Read(context.Background(), path, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return cfg, nil
	}
	if err != nil {
		return cfg, fmt.Errorf("read config: %v", err)
	}
	if err := yaml.Unmarshal(data, &cfg); err != nil {
		return cfg, fmt.Errorf("%s: %v: expected the keys address:, namespace: and runtime: at the top", path, err)
	}
	return cfg, nil
}
