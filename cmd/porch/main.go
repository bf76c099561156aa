// Command porch runs Azure Machine Learning CLI v2 pipeline YAML files on
// Temporal. See `porch help` for the commands.
package main

import (
	"context"
	"os"

	"github.com/porch-pipelines/porch/internal/cli"
)

func main() {
	os.Exit(cli.Run(context.Background(), os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
