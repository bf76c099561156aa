package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"
	"go.yaml.in/yaml/v3"

	"github.com/porch-pipelines/porch/compiler"
)

func (a *app) validateCommand() *cobra.Command {
	var server serverFlags
	cmd := &cobra.Command{
		Use:   "validate FILE",
		Short: "Check a pipeline or sweep job YAML file, or a component file, and the components it uses",
		Args:  exactArgs(1, "one pipeline YAML file"),
		RunE: func(cmd *cobra.Command, args []string) error {
			files, err := a.userFiles(cmd.Context())
			if err != nil {
				return err
			}
			if typ, name, ok := componentKind(files, args[0]); ok {
				return a.validateComponent(cmd.Context(), files, args[0], typ, name, server)
			}
			p, err := a.compile(cmd.Context(), args[0], nil, server, false)
			if err != nil {
				return err
			}
			fmt.Fprintf(a.stdout, "%s: ok (%d steps)\n", args[0], countSteps(p.Pipeline))
			return nil
		},
	}
	server.register(cmd)
	return cmd
}

// componentKind says whether a file is a component rather than a job, and
// returns its type and name, as compiler.ComponentFile decides: a command
// component (type: command, or no type: and a command:, Azure ML's
// default) or a parallel one, which porch runs only as steps, or one whose
// $schema is Azure ML's pipeline component schema. A command job, and a
// file it cannot read as a YAML mapping, are left to the compiler, which
// says what they are.
func componentKind(files userFiles, file string) (typ, name string, ok bool) {
	data, err := files.read(file)
	if err != nil || compiler.CheckYAMLNodes(file, data, files.limits).HasErrors() {
		return "", "", false
	}
	var doc yaml.Node
	if yaml.Unmarshal(data, &doc) != nil || len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
		return "", "", false
	}
	return compiler.ComponentFile(doc.Content[0])
}

// validateComponent checks a component file as porch component create
// does, through a pipeline whose one step uses it, so the two accept the
// same files. As for a pipeline, azureml: references resolve through the
// catalogue of the server porch knows of when the file has errors without.
func (a *app) validateComponent(ctx context.Context, files userFiles, file, typ, name string, server serverFlags) error {
	diags := checkComponent(files, file, nil)
	if diags.HasErrors() {
		if cat, _ := a.serverCatalog(ctx, server); cat != nil {
			diags = checkComponent(files, file, cat)
		}
	}
	if len(diags) > 0 {
		diags.Format(a.stderr)
	}
	if diags.HasErrors() {
		return silentExit(ExitFailure)
	}
	what := typ + " component"
	if name != "" {
		what += fmt.Sprintf(" %q", name)
	}
	fmt.Fprintf(a.stdout, "%s: ok (%s)\n", file, what)
	return nil
}
