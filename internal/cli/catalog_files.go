package cli

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/porch-pipelines/porch/compiler"
	"github.com/porch-pipelines/porch/compiler/plan"
	"github.com/porch-pipelines/porch/internal/userfile"
)

// maxComponentSource bounds a registered component's YAML: it travels in
// workflow history and in every continue-as-new of the catalogue.
const maxComponentSource = 256 << 10

// catalogFile is a datastore, data or component YAML file being read: its
// name, top-level keys and the warnings found so far.
type catalogFile struct {
	name     string
	data     []byte
	root     *yaml.Node
	keys     map[string]*yaml.Node // key -> value
	keyNodes map[string]*yaml.Node // key -> key node
	warnings []string
}

// readCatalogFile reads a YAML mapping, refusing duplicate keys.
func readCatalogFile(files userFiles, name string) (*catalogFile, error) {
	data, err := files.read(name)
	if err != nil {
		return nil, err
	}
	if diags := compiler.CheckYAMLNodes(name, data, files.limits); diags.HasErrors() {
		return nil, diags
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, compiler.SyntaxDiagnostics(name, data, err)
	}
	if len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, fmt.Errorf("%s:1: expected a YAML mapping with name: and type: keys", name)
	}
	f := &catalogFile{name: name, data: data, root: doc.Content[0],
		keys: map[string]*yaml.Node{}, keyNodes: map[string]*yaml.Node{}}
	for i := 0; i+1 < len(f.root.Content); i += 2 {
		k, v := f.root.Content[i], f.root.Content[i+1]
		if prev, dup := f.keyNodes[k.Value]; dup {
			return nil, f.errorf(k, "key %q appears twice (first on line %d): keep one", k.Value, prev.Line)
		}
		f.keys[k.Value], f.keyNodes[k.Value] = v, k
	}
	return f, nil
}

// errorf is an error at node n's line.
func (f *catalogFile) errorf(n *yaml.Node, format string, args ...any) error {
	return fmt.Errorf("%s:%d: %s", f.name, n.Line, fmt.Sprintf(format, args...))
}

// checkKeys warns about keys porch does not know, as Azure ML does.
func (f *catalogFile) checkKeys(known []string) {
	for i := 0; i < len(f.root.Content); i += 2 {
		k := f.root.Content[i]
		if !slices.Contains(known, k.Value) {
			f.warnings = append(f.warnings, fmt.Sprintf("%s:%d: warning: unknown key %q is ignored: porch reads %s",
				f.name, k.Line, k.Value, strings.Join(known, ", ")))
		}
	}
}

// str returns a scalar key's value, def when absent; a mapping or list is
// an error.
func (f *catalogFile) str(key, def string) (string, error) {
	v, ok := f.keys[key]
	if !ok || v.Tag == "!!null" {
		return def, nil
	}
	if v.Kind != yaml.ScalarNode {
		return "", f.errorf(v, "%s: expected a single value, found a %s", key, nodeKind(v))
	}
	return strings.TrimSpace(v.Value), nil
}

// required returns a scalar key that must be present and not empty.
func (f *catalogFile) required(key, what string) (string, error) {
	s, err := f.str(key, "")
	if err == nil && s == "" {
		if v, ok := f.keys[key]; ok {
			return "", f.errorf(v, "%s is empty: give %s", key, what)
		}
		return "", f.errorf(f.root, "no %s: key: give %s", key, what)
	}
	return s, err
}

func nodeKind(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "mapping"
	case yaml.SequenceNode:
		return "list"
	}
	return "value"
}

// credentialKeys are keys that would put a secret in the catalogue.
var credentialKeys = []string{"credentials", "access_key", "secret_key", "access_key_id", "secret_access_key",
	"aws_access_key_id", "aws_secret_access_key", "session_token", "account_key", "sas_token", "password",
	"client_secret"}

// refusedDatastoreTypes are Azure ML's datastore types porch cannot use,
// and why.
var refusedDatastoreTypes = map[string]string{
	"azure_file": "an Azure Files share (SMB), which porch does not mount: copy the data to a blob container and register " +
		"it as type: azure_blob, or mount the share on every worker and register the folder as type: local",
	"azure_data_lake_gen1": "Azure Data Lake Storage Gen1, which Microsoft retired in February 2024: move the data to " +
		"ADLS Gen2 and register it as type: azure_data_lake_gen2",
	"one_lake": "a Microsoft Fabric OneLake, which porch does not reach: copy the data to a blob container (type: azure_blob)",
}

// datastoreTypes is what a datastore file's type: may say.
const datastoreTypes = "local, s3, azure_blob or azure_data_lake_gen2"

// parseDatastoreFile reads a `porch datastore create -f` file. A local
// datastore's folder must exist on this machine; with createPath it is
// created when missing.
func parseDatastoreFile(files userFiles, name string, createPath bool) (plan.Datastore, []string, error) {
	f, err := readCatalogFile(files, name)
	if err != nil {
		return plan.Datastore{}, nil, err
	}
	var d plan.Datastore
	if d.Name, err = f.required("name", "the datastore's name"); err != nil {
		return d, nil, err
	}
	if d.Type, err = f.required("type", datastoreTypes); err != nil {
		return d, nil, err
	}
	if why := refusedDatastoreTypes[d.Type]; why != "" {
		return d, nil, f.errorf(f.keys["type"], "type %q is %s", d.Type, why)
	}
	if err := f.refuseCredentials(d); err != nil {
		return d, nil, err
	}
	if d.Description, err = f.str("description", ""); err != nil {
		return d, nil, err
	}
	typ := f.keys["type"]
	switch {
	case d.Type == plan.DatastoreLocal:
		f.checkKeys([]string{"$schema", "name", "type", "description", "tags", "path"})
		if d.Path, err = f.required("path", "the datastore's absolute folder, the same on every worker"); err != nil {
			return d, nil, err
		}
		if !filepath.IsAbs(d.Path) {
			return d, nil, f.errorf(f.keys["path"], "path %q is relative: give an absolute folder, the same on every worker", d.Path)
		}
		if err := datastoreFolder(f, d.Path, createPath); err != nil {
			return d, nil, err
		}
	case d.Type == plan.DatastoreS3:
		f.checkKeys([]string{"$schema", "name", "type", "description", "tags", "endpoint", "bucket", "prefix", "region"})
		if d.Bucket, err = f.required("bucket", "the bucket's name"); err != nil {
			return d, nil, err
		}
		if err := f.strs(map[string]*string{"endpoint": &d.Endpoint, "prefix": &d.Prefix, "region": &d.Region}); err != nil {
			return d, nil, err
		}
	case d.Azure():
		if err := f.azureDatastore(&d); err != nil {
			return d, nil, err
		}
	default:
		return d, nil, f.errorf(typ, "unknown datastore type %q: porch supports %s", d.Type, datastoreTypes)
	}
	return d, f.warnings, nil
}

// strs reads optional scalar keys into their destinations.
func (f *catalogFile) strs(keys map[string]*string) error {
	for _, k := range slices.Sorted(maps.Keys(keys)) {
		v, err := f.str(k, "")
		if err != nil {
			return err
		}
		*keys[k] = v
	}
	return nil
}

// refuseCredentials refuses a key that would put a secret in the
// catalogue. An Azure datastore's credentials: mapping, which Azure's own
// files hold, is read past (azureCredentials), not refused.
func (f *catalogFile) refuseCredentials(d plan.Datastore) error {
	for i := 0; i < len(f.root.Content); i += 2 {
		k := f.root.Content[i]
		key := strings.ToLower(k.Value)
		if !slices.Contains(credentialKeys, key) || (key == "credentials" && d.Azure()) {
			continue
		}
		where := "an s3 datastore's credentials come from each worker's environment (AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY) or " +
			"its credentials file (~/.aws/credentials)"
		if d.Azure() {
			where = "an Azure datastore's credentials come from each worker's environment (see docs/azure-storage.md)"
		}
		return f.errorf(k, "%q: porch never stores credentials: remove it; %s", k.Value, where)
	}
	return nil
}

// datastoreFolder checks that a local datastore's folder exists, creating
// it if create is set: a datastore registered at a mistyped path would
// otherwise come into being at the first step that writes to it.
func datastoreFolder(f *catalogFile, dir string, create bool) error {
	at := f.keys["path"]
	st, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist) && create:
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return f.errorf(at, "path %q: cannot create it (--create-path): %v", dir, unwrapPath(err))
		}
		f.warnings = append(f.warnings, fmt.Sprintf("%s:%d: created the folder %q (--create-path)", f.name, at.Line, dir))
		return nil
	case errors.Is(err, fs.ErrNotExist):
		return f.errorf(at, "path %q does not exist: create the folder (at this path on every worker), "+
			"or add --create-path to have porch create it here", dir)
	case err != nil:
		return f.errorf(at, "path %q: %v: give a folder this user can reach", dir, unwrapPath(err))
	case !st.IsDir():
		return f.errorf(at, "path %q is a file: give the datastore's folder", dir)
	}
	return nil
}

// unwrapPath drops the path from a file system error, for messages that
// name it already.
func unwrapPath(err error) error {
	var pathErr *fs.PathError
	if errors.As(err, &pathErr) {
		return pathErr.Err
	}
	return err
}

func absPath(name string) string {
	if a, err := filepath.Abs(name); err == nil {
		return a
	}
	return name
}

// componentTypes are the component types porch runs.
var componentTypes = []string{"command", "parallel", "pipeline"}

// parseComponentFile reads a `porch component create -f` file and checks
// it as porch validate would, through a pipeline that uses it as a step.
// The diagnostics (warnings, or errors with the returned error) come back
// for printing.
func parseComponentFile(files userFiles, name string) (plan.ComponentAsset, compiler.Diagnostics, error) {
	f, err := readCatalogFile(files, name)
	if err != nil {
		return plan.ComponentAsset{}, nil, err
	}
	var c plan.ComponentAsset
	if c.Name, err = f.required("name", "the component's name"); err != nil {
		return c, nil, err
	}
	if c.Version, err = f.str("version", "1"); err != nil {
		return c, nil, err
	}
	typ, err := f.str("type", "")
	if err != nil {
		return c, nil, err
	}
	switch {
	case typ == "" && f.keys["jobs"] != nil:
		typ = "pipeline"
	case typ == "":
		typ = "command" // Azure ML's default component type
	}
	if !slices.Contains(componentTypes, typ) {
		at := f.root
		if n, ok := f.keys["type"]; ok {
			at = n
		}
		return c, nil, f.errorf(at, "component type %q: porch registers command, parallel and pipeline components", typ)
	}
	if len(f.data) > maxComponentSource {
		return c, nil, fmt.Errorf("%s: %d bytes: a registered component is at most %d KiB; move long scripts into its code: folder",
			name, len(f.data), maxComponentSource>>10)
	}
	c.Source, c.Dir = string(f.data), filepath.Dir(absPath(name))
	diags := checkComponent(files, absPath(name), nil)
	if diags.HasErrors() {
		return c, diags, fmt.Errorf("%s: the component has errors: fix them and create it again", name)
	}
	return c, diags, nil
}

// checkComponent compiles a pipeline, held in memory beside the component,
// whose one step uses it, and keeps the diagnostics about the component's
// own files: the made-up pipeline binds none of its inputs. The pipeline
// names the component by its base name, so the diagnostics name it as file
// does; cat resolves azureml: references, nil for none.
func checkComponent(files userFiles, file string, cat *plan.Catalog) compiler.Diagnostics {
	wrapper := filepath.Join(filepath.Dir(file), ".porch-component-check.yml")
	src := "type: pipeline\njobs:\n  check:\n    component: " + strconv.Quote("./"+filepath.Base(file)) + "\n"
	_, diags := compiler.CompileContext(files.ctx, wrapper, compiler.Options{Limits: files.limits, Catalog: cat, ReadFile: func(n string) ([]byte, error) {
		if n == wrapper {
			return []byte(src), nil
		}
		return userfile.Read(files.ctx, n, files.limits.MaxFileBytes)
	}})
	var out compiler.Diagnostics
	for _, d := range diags {
		if d.Pos.File != wrapper {
			out = append(out, d)
		}
	}
	return out
}
