package worker

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The table of registered names, in namesPage, lies between these markers.
const (
	namesTableBegin = "<!-- registered names: TestRegisteredNamesTable writes it from worker/testdata/registered.golden -->\n"
	namesTableEnd   = "<!-- end of registered names -->\n"
)

// namesPage is the documentation page that holds the table: the names
// are what Temporal users see.
var namesPage = filepath.Join("..", "docs", "temporal.md")

// goldenLineRE splits a line of registered.golden: kind, name, the
// argument after the context (none for a local activity that takes only
// the context), and the result before the error.
var goldenLineRE = regexp.MustCompile(`^(workflow|activity) (\S+) func\([^,)]+(?:, ([^)]+))?\) (?:\((\S+), error\)|error)$`)

// TestRegisteredNamesTable checks that docs/temporal.md lists every workflow
// and activity name in registered.golden, in one table: the names are
// what the Temporal UI and CLI show. -update rewrites the table.
func TestRegisteredNamesTable(t *testing.T) {
	golden, err := os.ReadFile(filepath.Join("testdata", "registered.golden"))
	require.NoError(t, err)
	table := namesTable(t, string(golden))
	text, err := os.ReadFile(namesPage)
	require.NoError(t, err)
	begin := bytes.Index(text, []byte(namesTableBegin))
	end := bytes.Index(text, []byte(namesTableEnd))
	require.True(t, begin >= 0 && end > begin, "%s has no %q ... %q markers", namesPage, namesTableBegin, namesTableEnd)
	start := begin + len(namesTableBegin)
	if string(text[start:end]) == table {
		return
	}
	if !*update {
		t.Fatalf("%s's table of registered names is out of date: run go test ./worker -run TestRegisteredNamesTable -update\nwant:\n%s", namesPage, table)
	}
	out := append(append(append([]byte{}, text[:start]...), table...), text[end:]...)
	require.NoError(t, os.WriteFile(namesPage, out, 0o644))
}

// codeOrNone is a Go type as code, or "none" when there is none.
func codeOrNone(typ string) string {
	if typ == "" {
		return "none"
	}
	return "`" + typ + "`"
}

// namesTable is a markdown table with a row per line of registered.golden:
// workflows first, then activities, each sorted by name as the file is.
func namesTable(t *testing.T, golden string) string {
	var b strings.Builder
	b.WriteString("| Name | Kind | Input | Result |\n|---|---|---|---|\n")
	for _, kind := range []string{"workflow", "activity"} {
		for _, line := range strings.Split(strings.TrimSpace(golden), "\n") {
			m := goldenLineRE.FindStringSubmatch(line)
			require.NotNil(t, m, "registered.golden line %q is not kind name func(ctx, input) (result, error)", line)
			if m[1] != kind {
				continue
			}
			fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", m[2], kind, codeOrNone(m[3]), codeOrNone(m[4]))
		}
	}
	return b.String()
}
