package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/porch-pipelines/porch/compiler"
	"github.com/porch-pipelines/porch/compiler/plan"
	"github.com/porch-pipelines/porch/workflows"
)

// environmentCommand is `porch environment`: create, list, show and
// archive, as az ml environment.
func (a *app) environmentCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "environment", Short: "Register, list, show and archive environments (as az ml environment)"}
	cmd.AddCommand(a.environmentCreate(), a.environmentList(), a.environmentShow(), a.environmentArchive())
	return cmd
}

func (a *app) environmentCreate() *cobra.Command {
	var flags serverFlags
	var file, name, version string
	cmd := &cobra.Command{
		Use:   "create -f FILE [--name NAME] [--version V]",
		Short: "Register an environment version from its YAML file: image: or build:, conda_file:",
		Args:  exactArgs(0, "no arguments: name the file with -f"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if file == "" {
				return usageError("porch environment create needs -f FILE")
			}
			env, diags := compiler.ParseEnvironment(file, compiler.Options{})
			if diags.HasErrors() {
				return fmt.Errorf("%s", diags.Error())
			}
			diags.Format(a.stderr)
			env.Name = orDefaultString(name, env.Name)
			env.Version = orDefaultString(version, orDefaultString(env.Version, "1"))
			if env.Name == "" {
				return usageError("%s: no name: give the environment's name (name: in the file, or --name)", file)
			}
			return a.register(cmd.Context(), flags, workflows.CatalogEntry{Environment: &env},
				fmt.Sprintf("environment %s:%s", env.Name, env.Version))
		},
	}
	f := cmd.Flags()
	f.StringVarP(&file, "file", "f", "", "the environment YAML file (name, version, image or build, conda_file, description)")
	f.StringVarP(&name, "name", "n", "", "the environment's name (replaces the file's)")
	f.StringVarP(&version, "version", "v", "", "its version (default the file's, else 1); versions are immutable")
	flags.register(cmd)
	return cmd
}

func (a *app) environmentList() *cobra.Command {
	var name string
	var archived bool
	cmd := catalogCommand("list [--name NAME]", "List registered environments, each version", exactArgs(0, "no arguments"),
		func(ctx context.Context, _ []string, flags serverFlags) error {
			return a.catalog(ctx, flags, func(cat plan.Catalog, sess *session) error {
				var rows [][]string
				for _, e := range cat.Environments {
					if (name == "" || e.Name == name) && (archived || !e.Archived) {
						rows = append(rows, []string{e.Name, e.Version, e.Environment.Describe(), e.Description})
					}
				}
				if len(rows) == 0 {
					a.none(sess, "environments", "environment")
					return nil
				}
				return a.printTable("NAME\tVERSION\tENVIRONMENT\tDESCRIPTION", rows)
			})
		})
	cmd.Flags().StringVarP(&name, "name", "n", "", "list only this environment's versions")
	cmd.Flags().BoolVar(&archived, "include-archived", false, "list archived versions too")
	return cmd
}

func (a *app) environmentShow() *cobra.Command {
	var name, version, label string
	cmd := catalogCommand("show NAME[:VERSION|@latest] | --name NAME [--version V | --label latest]",
		"Show an environment's version (the latest by default), its conda file included", cobra.MaximumNArgs(1),
		func(ctx context.Context, args []string, flags serverFlags) error {
			ref, err := showRef(args, name, version, label)
			if err != nil {
				return err
			}
			n, v, err := splitVersion(ref)
			if err != nil {
				return err
			}
			return a.catalog(ctx, flags, func(cat plan.Catalog, sess *session) error {
				e, ok := cat.FindEnvironment(n, v)
				if !ok {
					return fmt.Errorf("no environment %s is registered on %s: list them with `porch environment list`", ref, sess.settings.Address)
				}
				var build string
				if b := e.Environment.Build; b != nil {
					build = b.Context + " (" + b.Dockerfile + ")"
				}
				a.fields([][2]string{{"name", e.Name}, {"version", e.Version}, {"description", e.Description},
					{"image", e.Environment.Image}, {"build", build}, {"conda_file", e.Environment.CondaFile},
					{"archived", map[bool]string{true: "true"}[e.Archived]}})
				if e.Environment.Conda != "" {
					fmt.Fprintf(a.stdout, "conda:\n%s", indent(e.Environment.Conda))
				}
				return nil
			})
		})
	cmd.Flags().StringVarP(&name, "name", "n", "", "the name")
	cmd.Flags().StringVarP(&version, "version", "v", "", "the version")
	cmd.Flags().StringVarP(&label, "label", "l", "", "latest: the version registered last")
	return cmd
}

func (a *app) environmentArchive() *cobra.Command {
	return catalogCommand("archive NAME:VERSION", "Archive an environment's version: left out of lists and of @latest, still usable by its version",
		exactArgs(1, "one environment version: NAME:VERSION"),
		func(ctx context.Context, args []string, flags serverFlags) error {
			n, v, err := splitVersion(args[0])
			if err != nil || v == "" {
				return usageError("%q: expected NAME:VERSION (versions are listed by `porch environment list`)", args[0])
			}
			var env plan.EnvironmentAsset
			err = a.catalog(ctx, flags, func(cat plan.Catalog, sess *session) error {
				e, ok := cat.FindEnvironment(n, v)
				if !ok {
					return fmt.Errorf("no environment %s:%s is registered on %s: list them with `porch environment list`", n, v, sess.settings.Address)
				}
				env = e
				return nil
			})
			if err != nil {
				return err
			}
			env.Archived = true
			return a.withCatalog(ctx, flags, func(ctx context.Context, sess *session) error {
				if _, err := workflows.RegisterCatalogEntry(ctx, sess.client, workflows.CatalogEntry{Environment: &env}); err != nil {
					return err
				}
				fmt.Fprintf(a.stdout, "environment %s:%s archived on %s (namespace %s)\n", n, v, sess.settings.Address, sess.settings.Namespace)
				return nil
			})
		})
}

func orDefaultString(v, def string) string {
	if v != "" {
		return v
	}
	return def
}

// indent indents each line of s by two spaces.
func indent(s string) string {
	var out []byte
	start := true
	for _, c := range []byte(s) {
		if start {
			out = append(out, ' ', ' ')
		}
		out = append(out, c)
		start = c == '\n'
	}
	if !start {
		out = append(out, '\n')
	}
	return string(out)
}
