package metrics

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"

	"github.com/porch-pipelines/porch/activities/atomicfile"
)

// FileEnv is the environment variable naming the metrics file a step
// appends to.
const FileEnv = "PORCH_METRICS_FILE"

// FileName is the metrics file's name in a step's artifacts folder.
const FileName = "metrics.jsonl"

//go:embed mlflow/*.py
var shimFS embed.FS

// shimName is the shim folder's name: the content hash in it means two porch
// versions sharing a cache folder never import each other's module.
var shimName = func() string {
	h := sha256.New()
	_ = fs.WalkDir(shimFS, "mlflow", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := shimFS.ReadFile(p)
		fmt.Fprintf(h, "%s\x00%d\x00", p, len(b))
		h.Write(b)
		return err
	})
	return "mlflow-shim-" + hex.EncodeToString(h.Sum(nil)[:8])
}()

type once struct {
	once sync.Once
	path string
	err  error
}

var shimDirs sync.Map // cache folder -> *once

// ShimDir writes porch's mlflow module into cacheDir ("" means
// os.UserCacheDir()/porch, else os.TempDir()/porch when that has no
// cache folder or it cannot be written) unless it
// is there already, and returns the folder to put on PYTHONPATH: it holds
// the package folder mlflow/. It is safe for concurrent use, in one process
// and across processes.
func ShimDir(cacheDir string) (string, error) {
	if cacheDir != "" {
		return shimDir(cacheDir)
	}
	base, err := os.UserCacheDir()
	if err != nil {
		return shimDir(filepath.Join(os.TempDir(), "porch"))
	}
	dir, err := shimDir(filepath.Join(base, "porch"))
	if err != nil {
		// A worker whose home has no writable cache (a service account,
		// a sandbox) still gets the module.
		return shimDir(filepath.Join(os.TempDir(), "porch"))
	}
	return dir, nil
}

func shimDir(cacheDir string) (string, error) {
	v, _ := shimDirs.LoadOrStore(cacheDir, &once{})
	o := v.(*once)
	o.once.Do(func() { o.path, o.err = writeShim(filepath.Join(cacheDir, shimName)) })
	return o.path, o.err
}

func writeShim(dir string) (string, error) {
	entries, err := shimFS.ReadDir("mlflow")
	if err != nil {
		return "", fmt.Errorf("read the embedded mlflow module: %w", err)
	}
	pkg := filepath.Join(dir, "mlflow")
	if err := os.MkdirAll(pkg, 0o755); err != nil {
		return "", fmt.Errorf("create the mlflow module's cache folder: %w; set the cache folder to a writable place", err)
	}
	for _, e := range entries {
		src, err := shimFS.ReadFile("mlflow/" + e.Name())
		if err != nil {
			return "", fmt.Errorf("read the embedded mlflow module: %w", err)
		}
		if err := atomicfile.Ensure(filepath.Join(pkg, e.Name()), src); err != nil {
			return "", fmt.Errorf("write the mlflow module: %w", err)
		}
	}
	return dir, nil
}

// Env returns the environment additions for a step whose metrics go to
// metricsFile: PORCH_METRICS_FILE, and PYTHONPATH=<shim>:<the worker's
// PYTHONPATH> when python cannot import a real mlflow with the worker's
// PYTHONPATH. See Extend.
func Env(python, metricsFile, cacheDir string) ([]string, error) {
	return additions(python, metricsFile, cacheDir, os.Getenv("PYTHONPATH"))
}

// Extend returns env (a step's whole environment, later entries winning, as
// os/exec takes it) with the metrics additions appended: PORCH_METRICS_FILE,
// and PYTHONPATH=<shim>:<env's PYTHONPATH> when python, run with env's
// PYTHONPATH, cannot import a real mlflow. A real mlflow is never shadowed.
//
// python is the interpreter the step's command runs as python and python3
// (porch cannot know what else a shell command starts): callers pass the
// worker's Python (stepio.Host.Python). Whether it has mlflow is
// asked once per interpreter and PYTHONPATH for the life of the process; an
// interpreter that cannot be started counts as one without mlflow (the
// module on PYTHONPATH is harmless to a step that does not run Python).
//
// On an error (the module cannot be written) the returned environment
// still names the metrics file, without the module.
func Extend(env []string, python, metricsFile, cacheDir string) ([]string, error) {
	add, err := additions(python, metricsFile, cacheDir, lookup(env, "PYTHONPATH"))
	return append(env[:len(env):len(env)], add...), err
}

// ExtendProbed is Extend for a step whose interpreter porch cannot run
// here (it is in a container image): has says whether it has mlflow.
func ExtendProbed(env []string, has bool, metricsFile, cacheDir string) ([]string, error) {
	add, err := shimAdditions(has, metricsFile, cacheDir, lookup(env, "PYTHONPATH"))
	return append(env[:len(env):len(env)], add...), err
}

func additions(python, metricsFile, cacheDir, pythonPath string) ([]string, error) {
	return shimAdditions(hasMlflow(python, pythonPath), metricsFile, cacheDir, pythonPath)
}

func shimAdditions(has bool, metricsFile, cacheDir, pythonPath string) ([]string, error) {
	add := []string{FileEnv + "=" + metricsFile}
	if has {
		return add, nil
	}
	dir, err := ShimDir(cacheDir)
	if err != nil {
		return add, err
	}
	if pythonPath != "" {
		dir += string(os.PathListSeparator) + pythonPath
	}
	return append(add, "PYTHONPATH="+dir), nil
}

// lookup is the value of the last entry for key in env.
func lookup(env []string, key string) string {
	for i := len(env) - 1; i >= 0; i-- {
		if v, ok := strings.CutPrefix(env[i], key+"="); ok {
			return v
		}
	}
	return ""
}

// probeScript finds mlflow without importing it (a real mlflow takes
// seconds to import) and without the current folder on sys.path.
var probeScript = ProbeScript("mlflow")

// ProbeScript is a Python script that exits 0 when the interpreter finds
// module, without importing it and without the current folder on
// sys.path, and 3 when it does not.
func ProbeScript(module string) string {
	return `import importlib.util, sys
sys.path[:] = [p for p in sys.path if p not in ("", ".")]
sys.exit(0 if importlib.util.find_spec("` + module + `") else 3)`
}

type probe struct {
	once sync.Once
	has  bool
}

var probes sync.Map // python + "\x00" + PYTHONPATH -> *probe

// hasMlflow reports whether python finds a module named mlflow with
// PYTHONPATH set to pythonPath.
func hasMlflow(python, pythonPath string) bool {
	v, _ := probes.LoadOrStore(python+"\x00"+pythonPath, &probe{})
	p := v.(*probe)
	p.once.Do(func() {
		cmd := exec.Command(python, "-c", probeScript)
		cmd.Env = append(withoutKey(os.Environ(), "PYTHONPATH"), "PYTHONPATH="+pythonPath)
		cmd.Dir = os.TempDir()
		// Exit 3 is "no mlflow"; an interpreter that cannot start has none.
		p.has = cmd.Run() == nil
	})
	return p.has
}

func withoutKey(env []string, key string) []string {
	out := make([]string, 0, len(env))
	for _, kv := range env {
		if !strings.HasPrefix(kv, key+"=") {
			out = append(out, kv)
		}
	}
	return out
}
