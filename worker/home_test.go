package worker

import (
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/log"
)

func TestStartRefusesAHomeItCannotWrite(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		setup    func(home string) // makes home unwritable
		folder   string            // the folder the message names
		cause    string
		skipRoot bool // root writes whatever the mode bits say
	}{
		"home is a file": {
			setup:  func(home string) { require.NoError(t, os.WriteFile(home, nil, 0o644)) },
			folder: ".", cause: "not a directory",
		},
		"work is a file": {
			setup: func(home string) {
				require.NoError(t, os.MkdirAll(home, 0o755))
				require.NoError(t, os.WriteFile(filepath.Join(home, "work"), nil, 0o644))
			},
			folder: "work", cause: "not a directory",
		},
		"datastores is read-only": {
			setup: func(home string) {
				require.NoError(t, os.MkdirAll(home, 0o755))
				require.NoError(t, os.Mkdir(filepath.Join(home, "datastores"), 0o555))
			},
			folder: "datastores", cause: "permission denied", skipRoot: true,
		},
		"home is read-only": {
			setup:  func(home string) { require.NoError(t, os.Mkdir(home, 0o555)) },
			folder: ".", cause: "permission denied", skipRoot: true,
		},
	} {
		t.Run(name, func(t *testing.T) {
			if tc.skipRoot && os.Geteuid() == 0 {
				t.Skip("root can write a read-only folder")
			}
			home := filepath.Join(t.TempDir(), "home")
			tc.setup(home)
			// Start refuses before it talks to a server: there is none.
			c, err := client.NewLazyClient(client.Options{HostPort: "127.0.0.1:1", Logger: log.NewStructuredLogger(slog.New(slog.DiscardHandler))})
			require.NoError(t, err)
			defer c.Close()
			w, err := Start(c, Options{Home: home, Computes: []string{""}, Workflows: true})
			require.Nil(t, w)
			require.EqualError(t, err, "the worker cannot write to "+quote(filepath.Join(home, tc.folder))+
				" in its porch home "+quote(home)+": "+tc.cause+": make it writable for this user, "+
				"or set PORCH_HOME to a folder this user can write (default ~/.porch)")
		})
	}
}

func TestCheckHomeCreatesMissingFolders(t *testing.T) {
	t.Parallel()
	home := filepath.Join(t.TempDir(), "new", "home")
	require.NoError(t, checkHome(home))
	for _, dir := range []string{home, filepath.Join(home, "work"), filepath.Join(home, "datastores")} {
		require.DirExists(t, dir)
		entries, err := os.ReadDir(dir)
		require.NoError(t, err)
		for _, e := range entries {
			require.True(t, e.IsDir(), "the write check left %s in %s", e.Name(), dir)
		}
	}
	require.EqualError(t, checkHome(""), "the worker has no porch home folder: set PORCH_HOME (default ~/.porch)")
}

func quote(s string) string { return `"` + s + `"` }
