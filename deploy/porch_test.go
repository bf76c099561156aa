package deploy

import (
	"bytes"
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/porch-pipelines/porch/compiler/plan"
	"github.com/porch-pipelines/porch/internal/cli"
)

// checkPorchArgs runs the real porch command line on args with --help
// added: cobra parses every flag before it prints help, so an unknown flag,
// a misspelt one or a flag without its value fails here as it would in the
// container. --help goes before the first flag, so that a flag missing its
// value cannot swallow it and start a real worker; the timeout bounds that
// case anyway.
func checkPorchArgs(t *testing.T, where string, args []string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var stdout, stderr bytes.Buffer
	code := cli.Run(ctx, withHelp(args), strings.NewReader(""), &stdout, &stderr)
	if code != cli.ExitOK {
		t.Errorf("%s: `porch %s` is refused by porch (exit %d): %s", where, strings.Join(args, " "), code,
			strings.TrimSpace(stderr.String()))
	}
}

// withHelp inserts --help before the first flag of args.
func withHelp(args []string) []string {
	i := 0
	for i < len(args) && !strings.HasPrefix(args[i], "-") {
		i++
	}
	return slices.Concat(args[:i], []string{"--help"}, args[i:])
}

// workerQueues returns the task queues `porch worker args...` serves
// activities on and whether it runs workflows, as porch worker decides it.
func workerQueues(args []string) (queues []string, workflows bool) {
	var computes []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--compute" && i+1 < len(args):
			computes = append(computes, args[i+1])
			i++
		case strings.HasPrefix(a, "--compute="):
			computes = append(computes, strings.TrimPrefix(a, "--compute="))
		case a == "--workflows":
			workflows = true
		}
	}
	if len(computes) == 0 {
		return []string{plan.DefaultTaskQueue}, true
	}
	for _, c := range computes {
		c = strings.TrimPrefix(c, "azureml:")
		if c == "serverless" || c == "local" {
			c = ""
		}
		queues = append(queues, plan.TaskQueue(c))
	}
	return queues, workflows
}

var (
	porchSourceOnce sync.Once
	porchSource     []byte
	porchSourceErr  error
)

// readsEnv reports whether porch's own Go code (tests and this folder left
// out) names the environment variable as a string literal: a variable the
// deployment files set for porch that porch never reads is a typo or stale.
func readsEnv(t *testing.T, name string) bool {
	t.Helper()
	porchSourceOnce.Do(func() {
		var buf bytes.Buffer
		porchSourceErr = filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() && (d.Name() == "deploy" || d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) && path != ".." {
				return filepath.SkipDir
			}
			if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return nil
			}
			b, err := os.ReadFile(path)
			buf.Write(b)
			return err
		})
		porchSource = buf.Bytes()
	})
	if porchSourceErr != nil {
		t.Fatalf("read porch's source: %v", porchSourceErr)
	}
	return bytes.Contains(porchSource, []byte(`"`+name+`"`))
}

// secretName matches environment variables that hold credentials.
var secretName = regexp.MustCompile(`(?i)(secret|password|passwd|token|access_key|_pwd$)`)

// variable is a compose variable: ${NAME}, ${NAME:-default} or
// ${NAME:?message}.
var variable = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?[-?])([^}]*))?\}`)

// interpolation is a value that is one compose variable and nothing else.
var interpolation = regexp.MustCompile(`^` + variable.String() + `$`)

// withDefaults is s as compose reads it with every variable unset:
// ${NAME:-default} is its default, any other variable is empty.
func withDefaults(s string) string {
	return variable.ReplaceAllStringFunc(s, func(v string) string {
		if m := variable.FindStringSubmatch(v); strings.HasSuffix(m[2], "-") {
			return m[3]
		}
		return ""
	})
}

func TestWorkerQueues(t *testing.T) {
	for _, tc := range []struct {
		args      []string
		queues    string
		workflows bool
	}{
		{[]string{"worker"}, "porch", true},
		{[]string{"worker", "--compute", "cpu-cluster", "--node", "$(POD_NAME)"}, "porch-compute-cpu-cluster", false},
		{[]string{"worker", "--compute=azureml:gpu", "--workflows"}, "porch-compute-gpu", true},
		{[]string{"worker", "--compute", "serverless"}, "porch", false},
	} {
		queues, workflows := workerQueues(tc.args)
		if strings.Join(queues, ",") != tc.queues || workflows != tc.workflows {
			t.Errorf("workerQueues(%q) = %q, %v; want %q, %v", tc.args, queues, workflows, tc.queues, tc.workflows)
		}
	}
}

func TestCheckPorchArgsRefusesUnknownFlags(t *testing.T) {
	for _, args := range [][]string{
		{"worker", "--computes", "cpu"},
		{"worker", "--compute"},
		{"wroker"},
	} {
		var stdout, stderr bytes.Buffer
		if code := cli.Run(context.Background(), withHelp(args), strings.NewReader(""), &stdout, &stderr); code == cli.ExitOK {
			t.Errorf("porch %q exits 0: the flag check would pass a broken file", withHelp(args))
		}
	}
}
