package cli

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"go.temporal.io/sdk/contrib/envconfig"
)

// Variables the temporal CLI reads to choose its client profile.
const (
	envProfile    = "TEMPORAL_PROFILE"
	envConfigFile = "TEMPORAL_CONFIG_FILE"
)

// setting is one connection setting under its three names: a flag, an
// environment variable, and a key of a profile in Temporal's TOML file.
type setting struct{ flag, env, key string }

// The connection settings porch names in messages. The *_DATA variables
// and keys (PEM in place of a path) count as the path's setting.
var (
	setAddress    = setting{"--address", envAddress, "address"}
	setNamespace  = setting{"--namespace", envNamespace, "namespace"}
	setAPIKey     = setting{"--api-key", "TEMPORAL_API_KEY", "api_key"}
	setTLS        = setting{"--tls", "TEMPORAL_TLS", "tls.disabled"}
	setCert       = setting{"--tls-cert-path", "TEMPORAL_TLS_CLIENT_CERT_PATH", "tls.client_cert_path"}
	setKey        = setting{"--tls-key-path", "TEMPORAL_TLS_CLIENT_KEY_PATH", "tls.client_key_path"}
	setCA         = setting{"--tls-ca-path", "TEMPORAL_TLS_SERVER_CA_CERT_PATH", "tls.server_ca_cert_path"}
	setServerName = setting{"--tls-server-name", "TEMPORAL_TLS_SERVER_NAME", "tls.server_name"}
)

// serverFlags are the flags of every command that connects to a server:
// which server, and how (Temporal's client profile, TLS, API key).
type serverFlags struct {
	address, namespace, profile string
	apiKey                      string
	tls                         optionalBool
	tlsCert, tlsKey, tlsCA      string
	tlsServerName               string
}

func (f *serverFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&f.address, "address", "", "Temporal frontend host:port (default: $TEMPORAL_ADDRESS, then the profile, "+
		"then address: in $PORCH_HOME/config.yaml)")
	fl.StringVar(&f.namespace, "namespace", "", "Temporal namespace (default: $TEMPORAL_NAMESPACE, then the profile, "+
		"then config.yaml, then \"default\")")
	fl.StringVar(&f.profile, "profile", "", "profile of Temporal's client config file ($TEMPORAL_CONFIG_FILE, default "+
		"~/.config/temporalio/temporal.toml) (default: $TEMPORAL_PROFILE, then \"default\")")
	fl.VarPF(&f.tls, "tls", "", "connect with TLS (default: on when a TLS setting or an API key is given; --tls=false turns it off)").
		NoOptDefVal = "true"
	fl.StringVar(&f.tlsCert, "tls-cert-path", "", "client certificate for mTLS, PEM (default: $TEMPORAL_TLS_CLIENT_CERT_PATH, then the profile)")
	fl.StringVar(&f.tlsKey, "tls-key-path", "", "client certificate's private key, PEM (default: $TEMPORAL_TLS_CLIENT_KEY_PATH, then the profile)")
	fl.StringVar(&f.tlsCA, "tls-ca-path", "", "CA certificate that signed the server's, PEM (default: $TEMPORAL_TLS_SERVER_CA_CERT_PATH, "+
		"then the profile, then the system's)")
	fl.StringVar(&f.tlsServerName, "tls-server-name", "", "name the server's certificate must hold (default: "+
		"$TEMPORAL_TLS_SERVER_NAME, then the profile, then the address's host)")
	fl.StringVar(&f.apiKey, "api-key", "", "API key sent as a bearer token; prefer $TEMPORAL_API_KEY, which other users "+
		"cannot read in the process list")
}

// optionalBool is a boolean flag that knows whether it was given.
type optionalBool struct{ set, value bool }

func (b *optionalBool) String() string {
	if !b.set {
		return ""
	}
	return strconv.FormatBool(b.value)
}

func (b *optionalBool) Set(s string) error {
	v, err := strconv.ParseBool(s)
	if err != nil {
		return fmt.Errorf("expected true or false")
	}
	b.set, b.value = true, v
	return nil
}

func (b *optionalBool) Type() string { return "bool" }

// origins says where each connection setting came from, by flag name, for
// messages: a flag, a variable, a profile's key, config.yaml.
type origins map[string]string

// of is where s came from, "" when it is not set.
func (o origins) of(s setting) string { return o[s.flag] }

// profileOrigin names key of profile name in file.
func profileOrigin(key, name, file string) string {
	return fmt.Sprintf("%s of profile %q in %s", key, name, file)
}

// loadProfile reads the client profile the flag, else TEMPORAL_PROFILE,
// names (else "default") from Temporal's TOML file, as the temporal CLI
// does. A missing file, or a missing "default" profile, is an empty
// profile; a profile asked for by name must exist, and named is its name.
func loadProfile(getenv func(string) string, flag string) (prof envconfig.ClientConfigProfile, o origins, named string, err error) {
	name, from := flag, "--profile"
	if name == "" {
		name, from = getenv(envProfile), envProfile
	}
	file := getenv(envConfigFile)
	if file == "" {
		file = envconfig.DefaultConfigFilePath()
	}
	o = origins{}
	conf, err := envconfig.LoadClientConfig(envconfig.LoadClientConfigOptions{ConfigFilePath: file, EnvLookup: envLookup(getenv)})
	if err != nil {
		return prof, o, "", fmt.Errorf("temporal client config %s: %v", file, err)
	}
	if name == "" {
		name = envconfig.DefaultConfigFileProfile
		if conf.Profiles[name] == nil {
			return prof, o, "", nil
		}
	} else {
		named = name
	}
	p := conf.Profiles[name]
	if p == nil {
		have := slices.Sorted(maps.Keys(conf.Profiles))
		if len(have) == 0 {
			return prof, o, "", fmt.Errorf("profile %q (from %s): %s has no profiles: add [profile.%s] to it, or set %s "+
				"to the file that has it", name, from, file, name, envConfigFile)
		}
		return prof, o, "", fmt.Errorf("profile %q (from %s) is not in %s, which has %s", name, from, file, strings.Join(have, ", "))
	}
	prof = *p
	mark(o, &prof, func(s setting) string { return profileOrigin(s.key, name, file) })
	return prof, o, named, nil
}

// mark records origin(s) for every setting p holds.
func mark(o origins, p *envconfig.ClientConfigProfile, origin func(setting) string) {
	t := p.TLS
	if t == nil {
		t = &envconfig.ClientConfigTLS{}
	}
	for s, set := range map[setting]bool{
		setAddress: p.Address != "", setNamespace: p.Namespace != "", setAPIKey: p.APIKey != "",
		setTLS: p.TLS != nil, setServerName: t.ServerName != "",
		setCert: t.ClientCertPath != "" || len(t.ClientCertData) > 0,
		setKey:  t.ClientKeyPath != "" || len(t.ClientKeyData) > 0,
		setCA:   t.ServerCACertPath != "" || len(t.ServerCACertData) > 0,
	} {
		if set {
			o[s.flag] = origin(s)
		}
	}
	// PEM given in place of a path is named as it was given.
	for _, d := range []struct {
		s    setting
		path string
		data []byte
	}{{setCert, t.ClientCertPath, t.ClientCertData}, {setKey, t.ClientKeyPath, t.ClientKeyData},
		{setCA, t.ServerCACertPath, t.ServerCACertData}} {
		if d.path == "" && len(d.data) > 0 {
			d.s.key = strings.TrimSuffix(d.s.key, "_path") + "_data"
			o[d.s.flag] = origin(d.s)
		}
	}
}

// applyEnv lays the TEMPORAL_* variables over p with envconfig, as the
// temporal CLI does, except that an empty variable counts as unset, as
// everywhere else in porch.
func applyEnv(getenv func(string) string, p *envconfig.ClientConfigProfile, o origins) error {
	if err := p.ApplyEnvVars(envLookup(getenv)); err != nil {
		return err
	}
	for _, s := range []setting{setAddress, setNamespace, setAPIKey, setTLS, setCert, setKey, setCA, setServerName} {
		names := []string{s.env}
		if data, ok := strings.CutSuffix(s.env, "_PATH"); ok {
			names = append(names, data+"_DATA")
		}
		for _, n := range names {
			if getenv(n) != "" {
				o[s.flag] = n
			}
		}
	}
	return nil
}

// apply lays the flags over p: the last word.
func (f serverFlags) apply(p *envconfig.ClientConfigProfile, o origins) {
	tls := func(s setting) *envconfig.ClientConfigTLS {
		o[s.flag] = s.flag
		if p.TLS == nil {
			p.TLS = &envconfig.ClientConfigTLS{}
		}
		return p.TLS
	}
	if f.address != "" {
		p.Address, o[setAddress.flag] = f.address, setAddress.flag
	}
	if f.namespace != "" {
		p.Namespace, o[setNamespace.flag] = f.namespace, setNamespace.flag
	}
	if f.apiKey != "" {
		p.APIKey, o[setAPIKey.flag] = f.apiKey, setAPIKey.flag
	}
	if f.tls.set {
		tls(setTLS).Disabled = !f.tls.value
	}
	// A path given here replaces PEM data a profile or variable gave.
	if f.tlsCert != "" {
		t := tls(setCert)
		t.ClientCertPath, t.ClientCertData = f.tlsCert, nil
	}
	if f.tlsKey != "" {
		t := tls(setKey)
		t.ClientKeyPath, t.ClientKeyData = f.tlsKey, nil
	}
	if f.tlsCA != "" {
		t := tls(setCA)
		t.ServerCACertPath, t.ServerCACertData = f.tlsCA, nil
	}
	if f.tlsServerName != "" {
		tls(setServerName).ServerName = f.tlsServerName
	}
}

// envLookup adapts getenv to envconfig: empty is unset. It lists no
// variables, so TEMPORAL_GRPC_META_* are not read (a profile's grpc_meta
// is).
type envLookup func(string) string

func (e envLookup) LookupEnv(k string) (string, bool) {
	v := e(k)
	return v, v != ""
}

func (e envLookup) Environ() []string { return nil }

// connectFlags are the flags that connect a porch command to the server
// of s as this one connects, for the commands that hints print: the named
// profile, --address unless that profile gave it, and the TLS flags this
// command was given. Never --api-key: porch prints no secret.
func (s settings) connectFlags() string {
	var out []string
	if s.profile != "" {
		out = append(out, "--profile", s.profile)
	}
	if s.profile == "" || !strings.HasPrefix(s.from.of(setAddress), setAddress.key+" of profile ") {
		out = append(out, "--address", s.Address)
	}
	if t := s.conn.TLS; t != nil {
		for _, f := range []struct {
			set   setting
			value string
		}{{setTLS, strconv.FormatBool(!t.Disabled)}, {setCert, t.ClientCertPath}, {setKey, t.ClientKeyPath},
			{setCA, t.ServerCACertPath}, {setServerName, t.ServerName}} {
			if s.from.of(f.set) == f.set.flag {
				out = append(out, f.set.flag+"="+f.value)
			}
		}
	}
	return strings.Join(out, " ")
}
