package compiler

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/porch-pipelines/porch/compiler/plan"
	"github.com/porch-pipelines/porch/internal/userfile"
)

// Environment keys, as Azure ML's environment schema has them.
var (
	environmentKeys = []string{"image", "conda_file", "build", "name", "version", "description"}
	// environmentSilent are keys Azure ML reads that do not change how
	// porch runs the step.
	environmentSilent = []string{"$schema", "tags", "os_type", "inference_config", "datastore", "properties", "intellectual_property"}
	buildKeys         = []string{"path", "dockerfile_path"}
)

// registerEnvironment is the advice for an environment that is not
// registered.
const registerEnvironment = "porch environment create -f env.yml"

// maxCondaBytes bounds a conda file: it travels in the plan.
const maxCondaBytes = 256 << 10

// parseEnvironment reads environment: in any of its forms. It returns nil
// for a null one; errors are reported at the value.
func (p *parser) parseEnvironment(name string, e entry) *plan.Environment {
	n := deref(e.val)
	switch {
	case n == nil || isNull(n):
		return nil
	case n.Kind == yaml.ScalarNode:
		return p.environmentRef(newScalar(name, n))
	case n.Kind != yaml.MappingNode:
		p.errorf(nodePos(name, n), "write a reference (azureml:<name>:<version>) or a mapping with image:, conda_file: or build:",
			"environment must be a reference or a mapping, found %s", kindName(n))
		return nil
	}
	return p.environmentMapping(name, n)
}

// environmentMapping reads an inline environment, or an environment
// file's content: image: or build:, and conda_file:.
func (p *parser) environmentMapping(name string, n *yaml.Node) *plan.Environment {
	f := p.fields(name, n, "environment", environmentKeys, environmentSilent)
	env := &plan.Environment{}
	if img := p.scalar(name, f["image"]); img != nil {
		env.Image = strings.TrimSpace(img.Value)
	}
	if b, ok := f["build"]; ok && !isNull(b.val) {
		env.Build = p.environmentBuild(name, b)
		if env.Image != "" && env.Build != nil {
			p.errorf(nodePos(name, b.key), "keep image: or build:, not both", "environment has both image: and build:")
		}
	}
	if c, ok := f["conda_file"]; ok && !isNull(c.val) {
		env.Conda, env.CondaFile = p.condaFile(name, c)
	}
	if env.Image == "" && env.Build == nil {
		p.errorf(nodePos(name, n), "add image: (a container image) or build: {path: <folder with a Dockerfile>}",
			"environment has no image: or build:")
		return nil
	}
	return env
}

// environmentBuild reads build: {path, dockerfile_path}.
func (p *parser) environmentBuild(name string, e entry) *plan.EnvironmentBuild {
	if deref(e.val).Kind != yaml.MappingNode {
		p.errorf(nodePos(name, e.val), "write build: {path: <folder>, dockerfile_path: Dockerfile}", "build must be a mapping, found %s", kindName(e.val))
		return nil
	}
	bf := p.fields(name, deref(e.val), "build", buildKeys, nil)
	pth := p.scalar(name, bf["path"])
	if pth == nil {
		p.errorf(nodePos(name, e.key), "add path: the folder holding the Dockerfile and what it copies", "build has no path")
		return nil
	}
	if strings.Contains(pth.Value, "://") || strings.HasPrefix(pth.Value, "azureml:") {
		p.errorf(pth.Pos, "point build.path at a local folder", "build context %q cannot be read offline", pth.Value)
		return nil
	}
	b := &plan.EnvironmentBuild{Context: localPath(p.absDir(name), pth.Value), Dockerfile: "Dockerfile"}
	if df := p.scalar(name, bf["dockerfile_path"]); df != nil && strings.TrimSpace(df.Value) != "" {
		b.Dockerfile = filepath.Clean(strings.TrimSpace(df.Value))
		if filepath.IsAbs(b.Dockerfile) || b.Dockerfile == ".." || strings.HasPrefix(b.Dockerfile, "../") {
			p.errorf(df.Pos, "write the Dockerfile's path relative to build.path, inside it", "dockerfile_path %q is outside the build context", df.Value)
		}
	}
	return b
}

// condaFile reads conda_file: a file next to the file naming it, or the
// conda environment written inline. It returns the content and where it
// came from.
func (p *parser) condaFile(name string, e entry) (string, string) {
	n := deref(e.val)
	if n.Kind == yaml.MappingNode {
		data, err := yaml.Marshal(blockStyle(n))
		if err != nil {
			p.errorf(nodePos(name, n), "write the conda environment as plain YAML", "conda_file cannot be read: %v", err)
			return "", ""
		}
		return string(data), "inline"
	}
	s := p.scalar(name, e)
	if s == nil {
		return "", ""
	}
	if strings.Contains(s.Value, "://") || strings.HasPrefix(s.Value, "azureml:") {
		p.errorf(s.Pos, "point conda_file at a local file", "conda file %q cannot be read offline", s.Value)
		return "", ""
	}
	path := localPath(p.absDir(name), s.Value)
	data, err := p.readFile(path)
	hint := "point conda_file at a conda environment file (name:, channels:, dependencies:); relative paths resolve against the folder of the file that names it"
	switch {
	case errors.Is(err, fs.ErrNotExist):
		p.errorf(s.Pos, hint, "conda file %q does not exist", s.Value)
		return "", ""
	case err != nil:
		p.errorf(s.Pos, hint, "conda file %q cannot be read: %v", s.Value, err)
		return "", ""
	case len(data) > maxCondaBytes:
		p.errorf(s.Pos, "a conda file lists packages: keep it under 256 KiB", "conda file %q is %d bytes", s.Value, len(data))
		return "", ""
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		p.errorf(s.Pos, "fix the conda file's YAML", "conda file %q is not YAML: %v", s.Value, err)
		return "", ""
	}
	return string(data), path
}

// blockStyle is a copy of n written in block style, as a conda file is.
func blockStyle(n *yaml.Node) *yaml.Node {
	n = deref(n)
	c := *n
	c.Style &^= yaml.FlowStyle
	c.Content = make([]*yaml.Node, len(n.Content))
	for i, k := range n.Content {
		c.Content[i] = blockStyle(k)
	}
	return &c
}

// environmentRef resolves an environment written as a reference: a
// registered environment (azureml:<name>:<version>, azureml:<name>@latest,
// or the same without azureml:), an Azure ML curated environment
// (azureml:AzureML-<name>..., azureml://registries/azureml/environments/
// <name>/versions/<n> or .../labels/latest), which runs in its public
// image.
func (p *parser) environmentRef(s *scalarAST) *plan.Environment {
	ref := strings.TrimSpace(s.Value)
	if rest, ok := strings.CutPrefix(ref, "azureml://registries/"); ok {
		return p.registryEnvironment(s, ref, rest)
	}
	if strings.HasPrefix(ref, "azureml:/") {
		p.errorf(s.Pos, "register the environment with "+registerEnvironment+" and name it azureml:<name>:<version>",
			"environment %q is an Azure resource id that porch cannot resolve", ref)
		return nil
	}
	r, summary, detail := parseAssetRef(ref)
	if summary != "" {
		p.errorf(s.Pos, detail, "environment %s", summary)
		return nil
	}
	if p.catalog != nil {
		if a, ok := p.catalog.FindEnvironment(r.Name, r.Version); ok {
			env := a.Environment
			env.Ref = ref
			return &env
		}
	}
	if img, ok := plan.CuratedImage(r.Name, r.Version, false); ok {
		return &plan.Environment{Image: img, Ref: ref}
	}
	// Reported with the other catalogue references, in the check phase.
	summary, detail = missingEnvironment(p.catalog, r)
	p.unknownEnvs = append(p.unknownEnvs, Diagnostic{Pos: s.Pos, Severity: Error, Summary: summary, Detail: detail})
	return nil
}

// missingEnvironment explains an environment reference the catalogue
// cannot resolve, as missingAsset does for data.
func missingEnvironment(cat *plan.Catalog, r assetRef) (string, string) {
	var names, versions []string
	if cat != nil {
		for _, e := range cat.Environments {
			if !contains(names, e.Name) {
				names = append(names, e.Name)
			}
			if e.Name == r.Name {
				versions = append(versions, e.Version)
			}
		}
	}
	if len(versions) > 0 && r.Version == "" {
		// Every version is archived.
		return fmt.Sprintf("environment %q has only archived versions", r.Name),
			fmt.Sprintf("name one of them (%s) or register a new one with %s", quotedList(versions), registerEnvironment)
	}
	summary, detail := missingAsset("environment", registerEnvironment, r, names, versions)
	if len(names) == 0 {
		detail += ", write it inline (image:, conda_file:, build:), or name an Azure ML curated environment (azureml:AzureML-<name>@latest)"
	}
	return summary, detail
}

// registryEnvironment resolves azureml://registries/<registry>/
// environments/<name>/(versions/<n>|labels/latest): environments of the
// azureml registry are curated ones.
func (p *parser) registryEnvironment(s *scalarAST, ref, rest string) *plan.Environment {
	parts := strings.Split(rest, "/")
	if len(parts) != 5 || parts[1] != "environments" || parts[2] == "" ||
		!(parts[3] == "versions" && parts[4] != "" || parts[3] == "labels" && parts[4] == "latest") {
		p.errorf(s.Pos, "write azureml://registries/<registry>/environments/<name>/versions/<n> or .../labels/latest",
			"environment %q is no form of registry reference porch knows", ref)
		return nil
	}
	if parts[0] != "azureml" {
		p.errorf(s.Pos, "porch maps only the azureml registry's curated environments to their images: register the environment with "+
			registerEnvironment+" or write it inline (image:)", "environment %q is in registry %q, which porch cannot reach", ref, parts[0])
		return nil
	}
	version := parts[4]
	img, _ := plan.CuratedImage(parts[2], version, true)
	return &plan.Environment{Image: img, Ref: ref}
}

// ParseEnvironment reads an environment file (as az ml environment create
// -f takes: name, version, description, image or build, conda_file) into
// the environment to register. Relative paths resolve against the file's
// folder; a conda file is read now and registered with its content.
func ParseEnvironment(path string, opts Options) (plan.EnvironmentAsset, Diagnostics) {
	opts.Limits = opts.Limits.withDefaults()
	read := opts.ReadFile
	if read == nil {
		read = func(name string) ([]byte, error) {
			return userfile.Read(context.Background(), name, opts.Limits.MaxFileBytes)
		}
	}
	p := newParser(context.Background(), read, opts.Limits)
	var a plan.EnvironmentAsset
	data, err := read(path)
	if err != nil {
		p.readError(path, plan.Pos{}, err)
		return a, p.list
	}
	n := decodeMapping(&p.diags, path, data, opts.Limits.MaxAliasNodes, "write an environment: name:, version:, and image: or build:",
		"the top level must be keys such as name:, version: and image:")
	if n == nil {
		return a, p.list
	}
	for key, dst := range map[string]*string{"name": &a.Name, "version": &a.Version, "description": &a.Description} {
		if e := lookup(n, key); e != nil {
			*dst = strings.TrimSpace(p.str(path, *e))
		}
	}
	if env := p.environmentMapping(path, n); env != nil {
		a.Environment = *env
	}
	sortDiagnostics(p.list)
	return a, p.list
}
