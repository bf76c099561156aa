package cli

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"go.temporal.io/sdk/client"
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
	// Metrics is the client's metrics handler (--metrics-address); nil
	// records none.
	Metrics client.MetricsHandler
}

// serverFlags are the --address and --namespace flags.
type serverFlags struct {
	address, namespace string
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

// resolveSettings applies the precedence flag, then environment, then
// config file, for the address and the namespace independently.
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
	s := settings{Home: home, Namespace: defaultNamespace}
	switch {
	case flags.address != "":
		s.Address, s.AddressFrom = flags.address, "--address"
	case getenv(envAddress) != "":
		s.Address, s.AddressFrom = getenv(envAddress), envAddress
	case cfg.Address != "":
		s.Address, s.AddressFrom = cfg.Address, cfgPath
	}
	switch {
	case flags.namespace != "":
		s.Namespace = flags.namespace
	case getenv(envNamespace) != "":
		s.Namespace = getenv(envNamespace)
	case cfg.Namespace != "":
		s.Namespace = cfg.Namespace
	}
	return s, nil
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
		return cfg, fmt.Errorf("%s: %v: expected keys address: and namespace:", path, err)
	}
	return cfg, nil
}
