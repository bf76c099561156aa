package plan

import (
	"strings"
)

// Environment is what a step runs in, from any of Azure ML's forms of
// environment: (an image, an image and a conda file, a Docker build
// context, a registered or a curated environment), resolved by the
// compiler. Exactly one of Image and Build is set.
//
// Plans recorded before environments ran have none: their steps run on
// the worker's host, as they did then.
type Environment struct {
	// Image is the container image reference the step runs in: image:
	// as written, a curated environment's public image, or a registered
	// environment's image.
	Image string `json:"image,omitempty"`
	// Build is a Docker build context the step's image is built from.
	Build *EnvironmentBuild `json:"build,omitempty"`
	// Conda is the conda file's content (conda_file:, a file read at
	// compile time or written inline); "" for none.
	Conda string `json:"conda,omitempty"`
	// CondaFile says where Conda came from, for messages: the file's
	// path, or "inline".
	CondaFile string `json:"conda_file,omitempty"`
	// Ref is the reference the environment was written as, for a
	// registered or curated one ("azureml:my-env:2",
	// "azureml://registries/azureml/environments/sklearn-1.5/labels/latest");
	// "" for one written inline.
	Ref string `json:"ref,omitempty"`
}

// EnvironmentBuild is build: {path, dockerfile_path}.
type EnvironmentBuild struct {
	// Context is the absolute path of the build context folder.
	Context string `json:"context"`
	// Dockerfile is the Dockerfile's path relative to Context
	// ("Dockerfile" unless dockerfile_path says otherwise).
	Dockerfile string `json:"dockerfile"`
}

// Describe is the environment in one line, for logs and job show: "image
// python:3.11 with conda file ./conda.yaml", "build ./env (Dockerfile)",
// "azureml:my-env:2 (image ...)".
func (e *Environment) Describe() string {
	if e == nil {
		return ""
	}
	var parts []string
	switch {
	case e.Image != "":
		parts = append(parts, "image "+e.Image)
	case e.Build != nil:
		parts = append(parts, "build "+e.Build.Context+" ("+e.Build.Dockerfile+")")
	}
	if e.Conda != "" {
		parts = append(parts, "conda file "+e.CondaFile)
	}
	s := strings.Join(parts, " with ")
	if e.Ref != "" {
		return e.Ref + " (" + s + ")"
	}
	return s
}

// EnvironmentAsset is one version of a registered environment (porch
// environment create, as az ml environment create).
type EnvironmentAsset struct {
	Name        string      `json:"name"`
	Version     string      `json:"version"`
	Description string      `json:"description,omitempty"`
	Environment Environment `json:"environment"`
	// Archived versions are left out of lists and of @latest, but a
	// reference naming their version still resolves, as in Azure ML.
	Archived bool `json:"archived,omitempty"`
}

// FindEnvironment returns a registered environment's version; "" or
// "latest" means the one registered last that is not archived.
func (c *Catalog) FindEnvironment(name, version string) (EnvironmentAsset, bool) {
	var found EnvironmentAsset
	ok := false
	for _, e := range c.Environments {
		if e.Name != name {
			continue
		}
		latest := version == "" || version == "latest"
		if version == e.Version || latest && !e.Archived {
			found, ok = e, true
		}
	}
	return found, ok
}

// CuratedRegistry is where Azure ML publishes its curated environments'
// images: mcr.microsoft.com/azureml/curated/<name>:<version>.
const CuratedRegistry = "mcr.microsoft.com/azureml/curated/"

// CuratedImage maps an Azure ML curated environment to its public image:
// the name in lower case without its "AzureML-" prefix, under
// CuratedRegistry, tagged with the version, or "latest" for "" and
// "latest". It reports false for a name that is not a curated one (which
// starts with "AzureML-" unless it comes from the azureml registry,
// fromRegistry).
func CuratedImage(name, version string, fromRegistry bool) (string, bool) {
	rest, curated := cutPrefixFold(name, "AzureML-")
	if !curated && !fromRegistry {
		return "", false
	}
	if rest == "" {
		return "", false
	}
	if version == "" {
		version = "latest"
	}
	return CuratedRegistry + strings.ToLower(rest) + ":" + version, true
}

func cutPrefixFold(s, prefix string) (string, bool) {
	if len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix) {
		return s[len(prefix):], true
	}
	return s, false
}
