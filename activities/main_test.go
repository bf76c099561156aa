package activities

import (
	"os"
	"testing"

	"github.com/porch-pipelines/porch/activities/objectstore/s3test"
)

// TestMain stops the MinIO server the s3 tests start.
func TestMain(m *testing.M) { os.Exit(s3test.Main(m)) }
