package entryscript

import (
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/porch-pipelines/porch/activities/atomicfile"
)

//go:embed driver.py
var driverSource []byte

// driverName is the driver's file name: its content hash in the name means
// two porch versions sharing a cache folder never run each other's driver.
var driverName = func() string {
	sum := sha256.Sum256(driverSource)
	return "entryscript-driver-" + hex.EncodeToString(sum[:8]) + ".py"
}()

var driverFiles sync.Map // cache folder -> *driverFile

type driverFile struct {
	once sync.Once
	path string
	err  error
}

// DriverPath writes the embedded driver into cacheDir ("" means the user's
// cache folder, see Options.CacheDir) unless it is there already, and
// returns its path. It is safe for concurrent use.
func DriverPath(cacheDir string) (string, error) {
	if cacheDir == "" {
		base, err := os.UserCacheDir()
		if err != nil {
			base = os.TempDir()
		}
		cacheDir = filepath.Join(base, "porch")
	}
	v, _ := driverFiles.LoadOrStore(cacheDir, &driverFile{})
	f := v.(*driverFile)
	f.once.Do(func() { f.path, f.err = writeDriver(cacheDir) })
	return f.path, f.err
}

func writeDriver(dir string) (string, error) {
	path := filepath.Join(dir, driverName)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("create the entry-script driver's cache folder: %w; set the cache folder to a writable place", err)
	}
	if err := atomicfile.Ensure(path, driverSource); err != nil {
		return "", fmt.Errorf("write the entry-script driver %q: %w", path, err)
	}
	return path, nil
}
