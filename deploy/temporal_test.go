package deploy

import (
	"os"
	"path"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
	corev1 "k8s.io/api/core/v1"
)

// kustomization is the part of kustomization.yaml the tests read.
type kustomization struct {
	Resources          []string `yaml:"resources"`
	ConfigMapGenerator []struct {
		Name  string   `yaml:"name"`
		Files []string `yaml:"files"`
	} `yaml:"configMapGenerator"`
}

// TestKubernetesTemporal checks that the Temporal server in Kubernetes runs
// the configuration compose runs: its pod mounts the ConfigMap the
// kustomization makes from temporal/config.yaml, at the path
// TEMPORAL_SERVER_CONFIG_FILE_PATH names, as compose mounts the same file.
func TestKubernetesTemporal(t *testing.T) {
	m := loadManifests(t, "kubernetes/temporal")
	data, err := os.ReadFile("kustomization.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var k kustomization
	if err := yaml.Unmarshal(data, &k); err != nil {
		t.Fatalf("kustomization.yaml: %v", err)
	}
	for _, r := range k.Resources {
		if _, err := os.Stat(r); err != nil {
			t.Errorf("kustomization.yaml: resource %s: %v", r, err)
		}
	}
	generated := map[string]map[string]string{} // ConfigMap -> key -> file
	for _, g := range k.ConfigMapGenerator {
		generated[g.Name] = map[string]string{}
		for _, f := range g.Files {
			key, file, ok := strings.Cut(f, "=")
			if !ok {
				key, file = path.Base(f), f
			}
			if _, err := os.Stat(file); err != nil {
				t.Errorf("kustomization.yaml: configMapGenerator %s: %v", g.Name, err)
			}
			generated[g.Name][key] = file
		}
	}
	server := m.deployment("temporal")
	if server == nil {
		t.Fatal("kubernetes/temporal: no Deployment temporal")
	}
	c := server.Spec.Template.Spec.Containers[0]
	cfgPath := envValue(c, "TEMPORAL_SERVER_CONFIG_FILE_PATH")
	file, ok := mountedFile(server.Spec.Template.Spec, c, cfgPath, generated)
	if !ok || file != "temporal/config.yaml" {
		t.Errorf("kubernetes/temporal: the server reads %q, which is not temporal/config.yaml through a generated ConfigMap (found %q)", cfgPath, file)
	}
	dyn := envValue(c, "DYNAMIC_CONFIG_FILE_PATH")
	if file, _ := mountedFile(server.Spec.Template.Spec, c, dyn, generated); file != "compose/dynamicconfig/porch.yaml" {
		t.Errorf("kubernetes/temporal: the server's dynamic config %q is not compose/dynamicconfig/porch.yaml (found %q)", dyn, file)
	}
	compose := loadCompose(t)
	ct := compose.Services["temporal"]
	if ct.Environment["TEMPORAL_SERVER_CONFIG_FILE_PATH"] == "" || !slices.Contains(ct.Volumes, "./temporal:"+path.Dir(ct.Environment["TEMPORAL_SERVER_CONFIG_FILE_PATH"])+":ro") {
		t.Errorf("docker-compose.yml: the temporal service does not read temporal/config.yaml through TEMPORAL_SERVER_CONFIG_FILE_PATH")
	}
	for _, j := range m.jobs {
		for _, v := range j.Spec.Template.Spec.Volumes {
			if v.ConfigMap != nil && generated[v.ConfigMap.Name] == nil {
				t.Errorf("%s: Job %q mounts ConfigMap %q, which kustomization.yaml does not generate", m.where[j], j.Name, v.ConfigMap.Name)
			}
		}
	}
}

func envValue(c corev1.Container, name string) string {
	for _, e := range c.Env {
		if e.Name == name {
			return e.Value
		}
	}
	return ""
}

// mountedFile is the repository file behind the path p in container c:
// a ConfigMap volume's key, from the generator that makes the ConfigMap.
func mountedFile(pod corev1.PodSpec, c corev1.Container, p string, generated map[string]map[string]string) (string, bool) {
	for _, vm := range c.VolumeMounts {
		if path.Dir(p) != vm.MountPath {
			continue
		}
		for _, v := range pod.Volumes {
			if v.Name == vm.Name && v.ConfigMap != nil {
				f, ok := generated[v.ConfigMap.Name][path.Base(p)]
				return f, ok
			}
		}
	}
	return "", false
}
