package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/porch-pipelines/porch/compiler/plan"
	"github.com/porch-pipelines/porch/workflows"
)

// assetKind is a kind of registered typed path: data assets and models,
// which `porch data` and `porch model` register, list, show and delete
// alike, as az ml data and az ml model do.
type assetKind struct {
	kind    workflows.CatalogKind
	noun    string // in messages
	types   []string
	defType string
	entry   func(*plan.Asset) workflows.CatalogEntry
	list    func(plan.Catalog) []plan.Asset
}

var (
	dataAssets = assetKind{kind: workflows.KindData, noun: "data asset", types: plan.DataTypes, defType: "uri_folder",
		entry: func(a *plan.Asset) workflows.CatalogEntry { return workflows.CatalogEntry{Data: a} },
		list:  func(c plan.Catalog) []plan.Asset { return c.Data }}
	models = assetKind{kind: workflows.KindModel, noun: "model", types: plan.ModelTypes, defType: "custom_model",
		entry: func(a *plan.Asset) workflows.CatalogEntry { return workflows.CatalogEntry{Model: a} },
		list:  func(c plan.Catalog) []plan.Asset { return c.Models }}
)

// assetCommand is `porch data` or `porch model`: create, list, show and
// delete.
func (a *app) assetCommand(k assetKind, short string) *cobra.Command {
	cmd := &cobra.Command{Use: string(k.kind), Short: short}
	cmd.AddCommand(a.assetCreate(k), a.assetList(k), a.assetShow(k), a.assetDelete(k))
	return cmd
}

// assetFlags are create's flags, as az ml data|model create's: each one
// given replaces its key in the file.
type assetFlags struct {
	file, name, version, path, typ, description string
}

func (a *app) assetCreate(k assetKind) *cobra.Command {
	var flags serverFlags
	var af assetFlags
	cmd := &cobra.Command{
		Use: "create -f FILE | --name NAME --path PATH [flags]",
		Short: fmt.Sprintf("Register a %s version from its YAML file or flags (as az ml %s create)",
			k.noun, k.kind),
		Args: exactArgs(0, "no arguments: name the file with -f, or give --name and --path"),
		RunE: func(cmd *cobra.Command, args []string) error {
			files, err := a.userFiles(cmd.Context())
			if err != nil {
				return err
			}
			asset, warnings, err := parseAsset(files, k, af)
			if err != nil {
				return err
			}
			a.warn(warnings)
			return a.register(cmd.Context(), flags, k.entry(&asset), fmt.Sprintf("%s %s:%s", k.kind, asset.Name, asset.Version))
		},
	}
	f := cmd.Flags()
	f.StringVarP(&af.file, "file", "f", "", "the "+k.noun+" YAML file (name, version, type, path, description)")
	f.StringVarP(&af.name, "name", "n", "", "the "+k.noun+"'s name")
	f.StringVarP(&af.version, "version", "v", "", "its version (default 1); versions are immutable")
	f.StringVarP(&af.path, "path", "p", "", "a local file or folder, a file:// URI, azureml://datastores/<name>/paths/<path>, or a wasbs://, abfss:// or https:// URI")
	f.StringVarP(&af.typ, "type", "t", "", "one of "+strings.Join(k.types, ", ")+" (default "+k.defType+")")
	f.StringVarP(&af.description, "description", "d", "", "a description")
	flags.register(cmd)
	return cmd
}

func (a *app) assetList(k assetKind) *cobra.Command {
	var name string
	cmd := catalogCommand("list [--name NAME]", fmt.Sprintf("List registered %ss, each version", k.noun), exactArgs(0, "no arguments"),
		func(ctx context.Context, _ []string, flags serverFlags) error {
			return a.catalog(ctx, flags, func(cat plan.Catalog, sess *session) error {
				var rows [][]string
				for _, d := range k.list(cat) {
					if name == "" || d.Name == name {
						rows = append(rows, []string{d.Name, d.Version, d.Type, d.Path, d.Description})
					}
				}
				switch {
				case len(rows) == 0 && name != "":
					return fmt.Errorf("no %s %q is registered on %s: list them with `porch %s list`",
						k.noun, name, sess.settings.Address, k.kind)
				case len(rows) == 0:
					a.none(sess, k.noun+"s", string(k.kind))
					return nil
				}
				return a.printTable("NAME\tVERSION\tTYPE\tPATH\tDESCRIPTION", rows)
			})
		})
	cmd.Flags().StringVarP(&name, "name", "n", "", "list only this "+k.noun+"'s versions")
	return cmd
}

func (a *app) assetShow(k assetKind) *cobra.Command {
	var name, version, label string
	cmd := catalogCommand("show NAME[:VERSION|@latest] | --name NAME [--version V | --label latest]",
		fmt.Sprintf("Show a %s's version (the latest by default)", k.noun),
		cobra.MaximumNArgs(1),
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
				d, ok := plan.FindAsset(k.list(cat), n, v)
				if !ok {
					return fmt.Errorf("no %s %s is registered on %s: list them with `porch %s list`",
						k.noun, ref, sess.settings.Address, k.kind)
				}
				a.fields([][2]string{{"name", d.Name}, {"version", d.Version}, {"type", d.Type},
					{"path", d.Path}, {"description", d.Description}})
				return nil
			})
		})
	cmd.Flags().StringVarP(&name, "name", "n", "", "the name")
	cmd.Flags().StringVarP(&version, "version", "v", "", "the version")
	cmd.Flags().StringVarP(&label, "label", "l", "", "latest: the version registered last")
	return cmd
}

// showRef is the NAME[:VERSION|@latest] that show's argument or flags name.
func showRef(args []string, name, version, label string) (string, error) {
	switch {
	case len(args) == 1 && name+version+label != "":
		return "", usageError("name the version either as NAME[:VERSION|@latest] or with --name, --version and --label, not both")
	case len(args) == 1:
		return args[0], nil
	case name == "":
		return "", usageError("name what to show: NAME[:VERSION|@latest], or --name NAME with --version V or --label latest")
	case version != "" && label != "":
		return "", usageError("give --version or --label, not both")
	case label != "" && label != "latest":
		return "", usageError("--label %q: porch knows the label latest only", label)
	case version != "":
		return name + ":" + version, nil
	}
	return name + "@latest", nil
}

func (a *app) assetDelete(k assetKind) *cobra.Command {
	return catalogCommand("delete NAME:VERSION", fmt.Sprintf("Delete a version of a %s (its files stay where they are)", k.noun),
		exactArgs(1, "one "+k.noun+" version: NAME:VERSION"),
		func(ctx context.Context, args []string, flags serverFlags) error {
			name, version, err := splitVersion(args[0])
			if err != nil || version == "" {
				return usageError("%q: expected NAME:VERSION (versions are listed by `porch %s list`)", args[0], k.kind)
			}
			return a.remove(ctx, flags, workflows.CatalogRemoval{Kind: k.kind, Name: name, Version: version},
				fmt.Sprintf("%s %s:%s", k.kind, name, version))
		})
}

// parseAsset reads a data asset or model from its file (if any) and the
// flags, which replace the file's keys. A local path is made absolute
// against the file's folder (the working folder for --path) and must exist.
func parseAsset(files userFiles, k assetKind, af assetFlags) (plan.Asset, []string, error) {
	src := assetSource{flags: af}
	if af.file != "" {
		f, err := readCatalogFile(files, af.file)
		if err != nil {
			return plan.Asset{}, nil, err
		}
		f.checkKeys([]string{"$schema", "name", "version", "type", "path", "description", "tags"})
		src.file = f
	} else if af.name == "" && af.path == "" {
		return plan.Asset{}, nil, usageError("porch %s create needs -f FILE, or --name and --path", k.kind)
	}
	var d plan.Asset
	var err error
	if d.Name, err = src.value("name", af.name, ""); err == nil && d.Name == "" {
		err = src.errorf("name", "no name: give the %s's name (name: in the file, or --name)", k.noun)
	}
	if err != nil {
		return d, nil, err
	}
	if d.Version, err = src.value("version", af.version, "1"); err != nil {
		return d, nil, err
	}
	if d.Type, err = src.value("type", af.typ, k.defType); err != nil {
		return d, nil, err
	}
	if !slices.Contains(k.types, d.Type) {
		return d, nil, src.errorf("type", "type %q: a %s is one of %s", d.Type, k.noun, strings.Join(k.types, ", "))
	}
	if d.Description, err = src.value("description", af.description, ""); err != nil {
		return d, nil, err
	}
	if d.Path, err = src.value("path", af.path, ""); err == nil && d.Path == "" {
		err = src.errorf("path", "no path: give a local path, a file:// URI or azureml://datastores/<name>/paths/<path> (path: in the file, or --path)")
	}
	if err != nil {
		return d, nil, err
	}
	if d.Path, err = src.assetPath(d); err != nil {
		return d, nil, err
	}
	return d, src.warnings(), nil
}

// assetSource is where a create's values come from: a flag when given,
// else the file's key.
type assetSource struct {
	file  *catalogFile
	flags assetFlags
}

// value is key's value: the flag's when given, else the file's, else def.
func (s assetSource) value(key, flag, def string) (string, error) {
	if flag = strings.TrimSpace(flag); flag != "" {
		return flag, nil
	}
	if s.file == nil {
		return def, nil
	}
	return s.file.str(key, def)
}

// errorf is an error about key: at its line in the file when it came from
// there.
func (s assetSource) errorf(key, format string, args ...any) error {
	if s.file != nil && s.flagOf(key) == "" {
		at := s.file.root
		if n, ok := s.file.keys[key]; ok {
			at = n
		}
		return s.file.errorf(at, format, args...)
	}
	return fmt.Errorf(format, args...)
}

func (s assetSource) flagOf(key string) string {
	switch key {
	case "name":
		return s.flags.name
	case "version":
		return s.flags.version
	case "type":
		return s.flags.typ
	case "path":
		return s.flags.path
	}
	return s.flags.description
}

func (s assetSource) warnings() []string {
	if s.file == nil {
		return nil
	}
	return s.file.warnings
}

// assetPath checks an asset's path and makes a local one absolute: against
// the file's folder when the file gave it, else the working folder. A
// local mlflow_model must be a folder holding an MLmodel file, as MLflow
// writes it.
func (s assetSource) assetPath(d plan.Asset) (string, error) {
	p := d.Path
	switch {
	case strings.HasPrefix(p, plan.DatastorePrefix):
		if _, _, ok := plan.SplitDatastoreURI(p); !ok {
			return "", s.errorf("path", "path %q: expected azureml://datastores/<name>/paths/<path>", p)
		}
		return p, nil
	case strings.HasPrefix(p, "file://"):
		return p, nil
	}
	if _, ok, err := plan.ParseStorageURI(p); ok {
		if err != nil {
			return "", s.errorf("path", "path %v", err)
		}
		return p, nil
	}
	if strings.Contains(p, "://") || strings.HasPrefix(p, "azureml:") {
		return "", s.errorf("path", "path %q: porch reads a local path, a file:// URI, azureml://datastores/<name>/paths/<path>, "+
			"or a wasbs://, abfss:// or https:// URI: copy it there first", p)
	}
	base := "the working folder"
	if !filepath.IsAbs(p) {
		dir, err := os.Getwd()
		if s.file != nil && s.flags.path == "" {
			dir, err = filepath.Dir(absPath(s.file.name)), nil
			base = filepath.Base(s.file.name)
		}
		if err != nil {
			return "", err
		}
		p = filepath.Join(dir, p)
	}
	st, err := os.Stat(p)
	if err != nil {
		return "", s.errorf("path", "path %q: %v: give an existing file or folder (relative paths are relative to %s)",
			d.Path, errors.Unwrap(err), base)
	}
	if d.Type == "mlflow_model" {
		if _, err := os.Stat(filepath.Join(p, "MLmodel")); !st.IsDir() || err != nil {
			return "", s.errorf("path", "path %q holds no MLmodel file: an mlflow_model is the folder MLflow saves a model to; "+
				"register other models as custom_model", d.Path)
		}
	}
	return p, nil
}
