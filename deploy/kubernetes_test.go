package deploy

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	sigsjson "sigs.k8s.io/json"
	sigsyaml "sigs.k8s.io/yaml"
)

// workerDrain is the least terminationGracePeriodSeconds a porch worker
// needs: worker.Stop gives entry-script processes 30 s for shutdown(), a
// cancelled command gets activities.KillGrace (5 s) between SIGTERM and
// SIGKILL, and the rest is margin for the SDK's own stop.
const workerDrain = 45 * time.Second

// manifests are the Kubernetes objects of a folder, by kind.
type manifests struct {
	namespaces    []*corev1.Namespace
	configMaps    []*corev1.ConfigMap
	secrets       []*corev1.Secret
	accounts      []*corev1.ServiceAccount
	deployments   []*appsv1.Deployment
	hpas          []*autoscalingv2.HorizontalPodAutoscaler
	scaledObjects []*scaledObject
	services      []*corev1.Service
	jobs          []*batchv1.Job
	where         map[any]string // object -> file:line
}

// loadManifests decodes every document of every *.yaml file in dir
// strictly into its API type: unknown and duplicate fields, bad quantities
// and unknown kinds are errors naming the file and the document's line.
func loadManifests(t *testing.T, dir string) *manifests {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no manifests in %s (%v)", dir, err)
	}
	m := &manifests{where: map[any]string{}}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		dec := yaml.NewDecoder(strings.NewReader(string(data)))
		for {
			var doc yaml.Node
			err := dec.Decode(&doc)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			if len(doc.Content) == 0 {
				continue
			}
			where := fmt.Sprintf("%s:%d", f, doc.Content[0].Line)
			if err := m.add(&doc, where); err != nil {
				t.Errorf("%s: %v", where, err)
			}
		}
	}
	if t.Failed() {
		t.FailNow() // the checks below would only repeat the decoding errors
	}
	return m
}

func (m *manifests) add(doc *yaml.Node, where string) error {
	data, err := yaml.Marshal(doc)
	if err != nil {
		return err
	}
	var tm metav1.TypeMeta
	if err := sigsyaml.Unmarshal(data, &tm); err != nil {
		return err
	}
	var obj any
	switch tm.APIVersion + " " + tm.Kind {
	case "v1 Namespace":
		obj = decodeInto(&m.namespaces)
	case "v1 ConfigMap":
		obj = decodeInto(&m.configMaps)
	case "v1 Secret":
		obj = decodeInto(&m.secrets)
	case "v1 ServiceAccount":
		obj = decodeInto(&m.accounts)
	case "apps/v1 Deployment":
		obj = decodeInto(&m.deployments)
	case "autoscaling/v2 HorizontalPodAutoscaler":
		obj = decodeInto(&m.hpas)
	case "keda.sh/v1alpha1 ScaledObject":
		obj = decodeInto(&m.scaledObjects)
	case "v1 Service":
		obj = decodeInto(&m.services)
	case "batch/v1 Job":
		obj = decodeInto(&m.jobs)
	default:
		return fmt.Errorf("unexpected object %q %q: add its type to loadManifests so it is checked", tm.APIVersion, tm.Kind)
	}
	m.where[obj] = where
	// Kubernetes decodes field names case-sensitively; encoding/json (and
	// so sigs.k8s.io/yaml's UnmarshalStrict) would take
	// readOnlyRootFileSystem for readOnlyRootFilesystem.
	js, err := sigsyaml.YAMLToJSONStrict(data)
	if err != nil {
		return fmt.Errorf("%s: %v", tm.Kind, err)
	}
	strict, err := sigsjson.UnmarshalStrict(js, obj)
	if err == nil && len(strict) > 0 {
		err = errors.Join(strict...)
	}
	if err != nil {
		return fmt.Errorf("%s: %v", tm.Kind, err)
	}
	return nil
}

// decodeInto appends a new, empty object to list and returns it.
func decodeInto[T any](list *[]*T) *T {
	obj := new(T)
	*list = append(*list, obj)
	return obj
}

func TestKubernetesManifests(t *testing.T) {
	m := loadManifests(t, "kubernetes")
	if len(m.namespaces) != 1 {
		t.Fatalf("want one Namespace in kubernetes/, found %d", len(m.namespaces))
	}
	ns := m.namespaces[0].Name
	for obj, where := range m.where {
		if meta, ok := objectMeta(obj); ok && meta.Namespace != ns {
			t.Errorf("%s: %q is in namespace %q, not %q", where, meta.Name, meta.Namespace, ns)
		}
	}
	for _, s := range m.secrets {
		if len(s.Data) > 0 || len(s.StringData) > 0 {
			t.Errorf("%s: Secret %q holds values: secrets are never inline; document `kubectl create secret` instead", m.where[s], s.Name)
		}
	}
	if len(m.deployments) == 0 {
		t.Fatal("no worker Deployment in kubernetes/")
	}
	scaled := map[string]int{}
	for _, so := range m.scaledObjects {
		scaled[so.Spec.ScaleTargetRef.Name]++
		m.checkScaledObject(t, so)
	}
	for _, d := range m.deployments {
		m.checkDeployment(t, d)
		if scaled[d.Name] != 1 {
			t.Errorf("%s: Deployment %q has %d ScaledObjects: want one, so it scales on its task queue", m.where[d], d.Name, scaled[d.Name])
		}
		if d.Spec.Replicas != nil {
			t.Errorf("%s: Deployment %q sets replicas: leave them to its autoscaler, or every kubectl apply resets them", m.where[d], d.Name)
		}
	}
}

func TestKubernetesHPAAlternative(t *testing.T) {
	main := loadManifests(t, "kubernetes")
	alt := loadManifests(t, filepath.Join("kubernetes", "hpa"))
	if len(alt.hpas) == 0 {
		t.Fatal("no HorizontalPodAutoscaler in kubernetes/hpa/")
	}
	for _, h := range alt.hpas {
		where := alt.where[h]
		d := main.deployment(h.Spec.ScaleTargetRef.Name)
		if d == nil || h.Spec.ScaleTargetRef.Kind != "Deployment" {
			t.Errorf("%s: HPA %q scales %s %q, which is not a worker Deployment in kubernetes/", where, h.Name,
				h.Spec.ScaleTargetRef.Kind, h.Spec.ScaleTargetRef.Name)
			continue
		}
		if h.Spec.MinReplicas == nil || *h.Spec.MinReplicas < 1 || *h.Spec.MinReplicas > h.Spec.MaxReplicas {
			t.Errorf("%s: HPA %q: want 1 <= minReplicas <= maxReplicas (%d)", where, h.Name, h.Spec.MaxReplicas)
		}
		queues, _ := workerQueues(d.Spec.Template.Spec.Containers[0].Args)
		for _, metric := range h.Spec.Metrics {
			if metric.External == nil || metric.External.Metric.Selector == nil {
				t.Errorf("%s: HPA %q: want External metrics selected by task queue", where, h.Name)
				continue
			}
			q := metric.External.Metric.Selector.MatchLabels["taskqueue"]
			if !slices.ContainsFunc(queues, func(queue string) bool { return promLabelValue(queue) == q }) {
				t.Errorf("%s: HPA %q follows taskqueue=%q, which is none of the queues Deployment %q serves as Temporal's Prometheus "+
					"output writes them (dashes become underscores): %q", where, h.Name, q, d.Name, queues)
			}
		}
	}
}

// promLabelValue is a label value as the Temporal server's
// Prometheus output writes it (tally's sanitizer, the server's default
// metrics framework): every character but an ASCII letter, a digit or "_"
// becomes "_", so the task queue porch-compute-cpu-cluster is
// taskqueue="porch_compute_cpu_cluster".
func promLabelValue(v string) string {
	return strings.Map(func(r rune) rune {
		if r == '_' || 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' {
			return r
		}
		return '_'
	}, v)
}

func (m *manifests) deployment(name string) *appsv1.Deployment {
	for _, d := range m.deployments {
		if d.Name == name {
			return d
		}
	}
	return nil
}

// envOf is every variable the container sees by name: its env, and the
// keys of the ConfigMaps its envFrom names.
func (m *manifests) envOf(c *corev1.Container) map[string]bool {
	env := map[string]bool{}
	for _, e := range c.Env {
		env[e.Name] = true
	}
	for _, from := range c.EnvFrom {
		if from.ConfigMapRef == nil {
			continue
		}
		for _, cm := range m.configMaps {
			if cm.Name == from.ConfigMapRef.Name {
				for k := range cm.Data {
					env[k] = true
				}
			}
		}
	}
	return env
}

func objectMeta(obj any) (metav1.ObjectMeta, bool) {
	switch o := obj.(type) {
	case *corev1.ConfigMap:
		return o.ObjectMeta, true
	case *corev1.Secret:
		return o.ObjectMeta, true
	case *corev1.ServiceAccount:
		return o.ObjectMeta, true
	case *appsv1.Deployment:
		return o.ObjectMeta, true
	case *autoscalingv2.HorizontalPodAutoscaler:
		return o.ObjectMeta, true
	case *scaledObject:
		return o.ObjectMeta, true
	}
	return metav1.ObjectMeta{}, false
}

// sortedKeys is for stable messages.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// atoi reads a KEDA metadata integer.
func atoi(s string) (int, bool) {
	n, err := strconv.Atoi(s)
	return n, err == nil
}
