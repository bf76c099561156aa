package cli

import (
	"os"
	"os/user"
)

// submitter is who submits a run, recorded on it as PorchUser: $PORCH_USER,
// else the login name and host, "alice@laptop".
func submitter(getenv func(string) string) string {
	if u := getenv(envUser); u != "" {
		return u
	}
	name := getenv("USER")
	if u, err := user.Current(); err == nil && u.Username != "" {
		name = u.Username
	}
	if name == "" {
		name = "unknown"
	}
	if host, err := os.Hostname(); err == nil && host != "" {
		return name + "@" + host
	}
	return name
}
