package cluster

import (
	"crypto/rand"
	"encoding/hex"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// The PostgreSQL server the test uses: CI machines run one on loopback with
// trust authentication.
const (
	pgHost = "127.0.0.1"
	pgPort = "5432"
	pgUser = "postgres"
)

// databases are the two databases of one Temporal cluster.
type databases struct{ Main, Visibility string }

// needPostgres skips the test, saying why, when no PostgreSQL answers.
func needPostgres(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("pg_isready"); err != nil {
		t.Skipf("the cluster test runs Temporal on PostgreSQL at %s:%s: pg_isready is not installed (install postgresql-client)", pgHost, pgPort)
	}
	if out, err := exec.Command("pg_isready", "-h", pgHost, "-p", pgPort, "-t", "3").CombinedOutput(); err != nil {
		t.Skipf("the cluster test runs Temporal on PostgreSQL: none answers at %s:%s (pg_isready: %s)", pgHost, pgPort, strings.TrimSpace(string(out)))
	}
}

// newDatabases creates a fresh pair of databases with Temporal's schemas,
// with the schema tool exactly as deploy/compose/scripts/setup-postgres.sh
// runs it, and drops them when the test ends.
func newDatabases(t *testing.T, sqlTool string) databases {
	t.Helper()
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	name := "porch_cluster_" + hex.EncodeToString(b)
	dbs := databases{Main: name, Visibility: name + "_visibility"}
	start := time.Now()
	for _, db := range []struct{ name, schema string }{
		{dbs.Main, "postgresql/v12/temporal"},
		{dbs.Visibility, "postgresql/v12/visibility"},
	} {
		tool := func(args ...string) *exec.Cmd {
			return exec.Command(sqlTool, append([]string{"--plugin", "postgres12", "--ep", pgHost, "-p", pgPort,
				"-u", pgUser, "--db", db.name}, args...)...)
		}
		run(t, tool("create-database"))
		t.Cleanup(func() {
			if out, err := tool("drop-database", "--force").CombinedOutput(); err != nil {
				t.Logf("drop database %q: %v: %s", db.name, err, out)
			}
		})
		// The schema tool's own copy of the schemas, from the same module
		// version as the server.
		run(t, tool("setup-schema", "-v", "0.0"))
		run(t, tool("update-schema", "--schema-name", db.schema))
	}
	t.Logf("created databases %s and %s with temporal-sql-tool in %s", dbs.Main, dbs.Visibility, time.Since(start).Round(10*time.Millisecond))
	return dbs
}
