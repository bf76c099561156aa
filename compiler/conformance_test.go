package compiler

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// examplesDir is the azureml-examples checkout shared next to the repository.
var examplesDir = filepath.Join("..", "..", "shared", "azureml-examples")

// pipelineFiles lists the YAML files under dir whose top-level type is
// pipeline, or whose top-level component: names a file.
func pipelineFiles(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() || (!strings.HasSuffix(path, ".yml") && !strings.HasSuffix(path, ".yaml")) {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		var top struct {
			Type      string `yaml:"type"`
			Component any    `yaml:"component"`
		}
		if yaml.Unmarshal(data, &top) != nil {
			return nil
		}
		if _, ok := top.Component.(string); top.Type == "pipeline" || ok {
			out = append(out, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(out)
	return out
}

// quotedRE matches the quoted names in a summary, to group refusals by reason.
var quotedRE = regexp.MustCompile(`"[^"]*"|[0-9]+`)

// reasonOf is a diagnostic's summary with names blanked: its reason.
func reasonOf(d Diagnostic) string {
	return quotedRE.ReplaceAllString(d.Summary, "…")
}

func TestConformance(t *testing.T) {
	if _, err := os.Stat(examplesDir); err != nil {
		t.Skipf("azureml-examples not found at %s", examplesDir)
	}
	files := pipelineFiles(t, examplesDir)
	compiled, refused, hello := 0, 0, 0
	reasons := map[string]int{}
	for _, f := range files {
		p, diags := Compile(f, Options{})
		for _, d := range diags {
			if d.Pos.File == "" || d.Pos.Line == 0 || d.Detail == "" {
				t.Errorf("%s: diagnostic without a file, a line or advice: %s", f, d.Summary)
			}
		}
		if p != nil {
			compiled++
			if strings.HasPrefix(filepath.Base(f), "hello-pipeline") {
				hello++
			}
			continue
		}
		refused++
		for _, d := range diags {
			if d.Severity != Error {
				continue
			}
			reasons[reasonOf(d)]++
		}
		if strings.Contains(f, "hello-pipeline") {
			t.Errorf("%s must compile:\n%s", f, diags.Error())
		}
	}
	// cli/jobs/basics holds 14 hello-pipeline*.yml, all plain command steps.
	if hello != 14 {
		t.Errorf("compiled %d hello-pipeline*.yml, want 14", hello)
	}
	t.Logf("files %d: compiled %d, refused-clearly %d; errors by reason:", len(files), compiled, refused)
	for _, r := range sortedKeysInt(reasons) {
		t.Logf("  %4d  %s", reasons[r], r)
	}
}

func sortedKeysInt(m map[string]int) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
