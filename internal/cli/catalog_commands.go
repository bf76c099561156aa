package cli

import (
	"context"
	"fmt"
	"strings"

	"github.com/porch-pipelines/porch/compiler/plan"
	"github.com/porch-pipelines/porch/workflows"
	"github.com/spf13/cobra"
)

func (a *app) datastoreCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "datastore",
		Short: "Register, list, show and delete datastores (as az ml datastore)",
	}
	var createPath bool
	create := a.createFileCommand("datastore", func(ctx context.Context, file string, flags serverFlags) error {
		files, err := a.userFiles(ctx)
		if err != nil {
			return err
		}
		d, warnings, err := parseDatastoreFile(files, file, createPath)
		if err != nil {
			return err
		}
		a.warn(warnings)
		return a.register(ctx, flags, workflows.CatalogEntry{Datastore: &d}, fmt.Sprintf("datastore %q", d.Name))
	})
	create.Flags().BoolVar(&createPath, "create-path", false, "create a local datastore's folder if it does not exist (otherwise it must)")
	cmd.AddCommand(
		create,
		catalogCommand("list", "List registered datastores", exactArgs(0, "no arguments"),
			func(ctx context.Context, _ []string, flags serverFlags) error {
				return a.catalog(ctx, flags, func(cat plan.Catalog, sess *session) error {
					if len(cat.Datastores) == 0 {
						a.none(sess, "datastores", "datastore")
						return nil
					}
					var rows [][]string
					for _, d := range cat.Datastores {
						rows = append(rows, []string{d.Name, d.Type, datastoreLocation(d), d.Description})
					}
					return a.printTable("NAME\tTYPE\tLOCATION\tDESCRIPTION", rows)
				})
			}),
		catalogCommand("show NAME", "Show a registered datastore", exactArgs(1, "one datastore name"),
			func(ctx context.Context, args []string, flags serverFlags) error {
				return a.catalog(ctx, flags, func(cat plan.Catalog, sess *session) error {
					d, ok := cat.FindDatastore(args[0])
					if !ok {
						return fmt.Errorf("no datastore %q is registered on %s: list them with `porch datastore list`",
							args[0], sess.settings.Address)
					}
					a.fields([][2]string{{"name", d.Name}, {"type", d.Type}, {"description", d.Description},
						{"path", d.Path}, {"endpoint", d.Endpoint}, {"bucket", d.Bucket}, {"prefix", d.Prefix},
						{"region", d.Region}, {"account_name", d.AccountName}, {"container_name", d.ContainerName},
						{"filesystem", d.Filesystem}, {"protocol", d.Protocol}})
					return nil
				})
			}),
		catalogCommand("delete NAME", "Delete a registered datastore (its files stay where they are)",
			exactArgs(1, "one datastore name"),
			func(ctx context.Context, args []string, flags serverFlags) error {
				return a.remove(ctx, flags, workflows.CatalogRemoval{Kind: workflows.KindDatastore, Name: args[0]},
					fmt.Sprintf("datastore %q", args[0]))
			}),
	)
	return cmd
}

// datastoreLocation is a local datastore's folder, an s3 one's bucket or
// an Azure one's container.
func datastoreLocation(d plan.Datastore) string {
	if d.Azure() {
		scheme, host := "wasbs", "blob"
		if d.Type == plan.DatastoreAzureDataLakeGen2 {
			scheme, host = "abfss", "dfs"
		}
		suffix := d.Endpoint
		if suffix == "" {
			suffix = "core.windows.net"
		}
		return fmt.Sprintf("%s://%s@%s.%s.%s", scheme, d.Container(), d.AccountName, host, suffix)
	}
	if d.Type != plan.DatastoreS3 {
		return d.Path
	}
	loc := "s3://" + d.Bucket
	if d.Prefix != "" {
		loc += "/" + strings.Trim(d.Prefix, "/")
	}
	if d.Endpoint != "" {
		loc += " at " + d.Endpoint
	}
	return loc
}

// warn prints warnings to stderr.
func (a *app) warn(warnings []string) {
	for _, w := range warnings {
		fmt.Fprintln(a.stderr, w)
	}
}

// fields prints "key: value" lines, skipping empty values.
func (a *app) fields(kv [][2]string) {
	for _, f := range kv {
		if f[1] != "" {
			fmt.Fprintf(a.stdout, "%s: %s\n", f[0], f[1])
		}
	}
}

func (a *app) componentCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "component",
		Short: "Register, list and show components (as az ml component)",
	}
	cmd.AddCommand(
		a.createFileCommand("component", func(ctx context.Context, file string, flags serverFlags) error {
			files, err := a.userFiles(ctx)
			if err != nil {
				return err
			}
			c, diags, err := parseComponentFile(files, file)
			if len(diags) > 0 {
				diags.Format(a.stderr)
			}
			if err != nil {
				return err
			}
			return a.register(ctx, flags, workflows.CatalogEntry{Component: &c}, fmt.Sprintf("component %s:%s", c.Name, c.Version))
		}),
		catalogCommand("list", "List registered components, each version", exactArgs(0, "no arguments"),
			func(ctx context.Context, _ []string, flags serverFlags) error {
				return a.catalog(ctx, flags, func(cat plan.Catalog, sess *session) error {
					if len(cat.Components) == 0 {
						a.none(sess, "components", "component")
						return nil
					}
					var rows [][]string
					for _, c := range cat.Components {
						rows = append(rows, []string{c.Name, c.Version, c.Dir})
					}
					return a.printTable("NAME\tVERSION\tFOLDER", rows)
				})
			}),
		catalogCommand("show NAME[:VERSION|@latest]", "Show a component's version and its YAML (the latest by default)",
			exactArgs(1, "one component: NAME, NAME:VERSION or NAME@latest"),
			func(ctx context.Context, args []string, flags serverFlags) error {
				name, version, err := splitVersion(args[0])
				if err != nil {
					return err
				}
				return a.catalog(ctx, flags, func(cat plan.Catalog, sess *session) error {
					c, ok := cat.FindComponent(name, version)
					if !ok {
						return fmt.Errorf("no component %s is registered on %s: list them with `porch component list`",
							args[0], sess.settings.Address)
					}
					a.fields([][2]string{{"name", c.Name}, {"version", c.Version}, {"folder", c.Dir}})
					fmt.Fprintf(a.stdout, "---\n%s", c.Source)
					if !strings.HasSuffix(c.Source, "\n") {
						fmt.Fprintln(a.stdout)
					}
					return nil
				})
			}),
	)
	return cmd
}
