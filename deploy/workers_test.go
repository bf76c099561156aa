package deploy

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/porch-pipelines/porch/compiler/plan"
)

// scaledObject is KEDA's ScaledObject (keda.sh/v1alpha1) with the fields of
// its spec as KEDA documents them; decoding strictly into it refuses a
// misspelt field.
type scaledObject struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              scaledObjectSpec `json:"spec"`
}

type scaledObjectSpec struct {
	ScaleTargetRef struct {
		APIVersion             string `json:"apiVersion,omitempty"`
		Kind                   string `json:"kind,omitempty"`
		Name                   string `json:"name"`
		EnvSourceContainerName string `json:"envSourceContainerName,omitempty"`
	} `json:"scaleTargetRef"`
	PollingInterval       *int32 `json:"pollingInterval,omitempty"`
	InitialCooldownPeriod *int32 `json:"initialCooldownPeriod,omitempty"`
	CooldownPeriod        *int32 `json:"cooldownPeriod,omitempty"`
	IdleReplicaCount      *int32 `json:"idleReplicaCount,omitempty"`
	MinReplicaCount       *int32 `json:"minReplicaCount,omitempty"`
	MaxReplicaCount       *int32 `json:"maxReplicaCount,omitempty"`
	Advanced              *struct {
		RestoreToOriginalReplicaCount bool `json:"restoreToOriginalReplicaCount,omitempty"`
		HorizontalPodAutoscalerConfig *struct {
			Name     string                                         `json:"name,omitempty"`
			Behavior *autoscalingv2.HorizontalPodAutoscalerBehavior `json:"behavior,omitempty"`
		} `json:"horizontalPodAutoscalerConfig,omitempty"`
	} `json:"advanced,omitempty"`
	Fallback *struct {
		FailureThreshold int32 `json:"failureThreshold"`
		Replicas         int32 `json:"replicas"`
	} `json:"fallback,omitempty"`
	Triggers []scaleTrigger `json:"triggers"`
}

type scaleTrigger struct {
	Type              string            `json:"type"`
	Name              string            `json:"name,omitempty"`
	UseCachedMetrics  bool              `json:"useCachedMetrics,omitempty"`
	MetricType        string            `json:"metricType,omitempty"`
	Metadata          map[string]string `json:"metadata"`
	AuthenticationRef *struct {
		Name string `json:"name"`
		Kind string `json:"kind,omitempty"`
	} `json:"authenticationRef,omitempty"`
}

// temporalTriggerKeys are the metadata keys of KEDA's temporal scaler
// (keda.sh/docs/2.22/scalers/temporal).
var temporalTriggerKeys = []string{"endpoint", "endpointFromEnv", "namespace", "activationTargetQueueSize",
	"targetQueueSize", "taskQueue", "queueTypes", "workerDeploymentName", "workerDeploymentBuildId", "buildId",
	"selectAllActive", "selectUnversioned", "includeRunningWorkflowCount", "workflowTaskQueueForCount",
	"apiKeyFromEnv", "minConnectTimeout", "unsafeSsl", "tlsServerName", "enableTLS"}

func (m *manifests) checkDeployment(t *testing.T, d *appsv1.Deployment) {
	where := m.where[d]
	spec := d.Spec.Template.Spec
	sel, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
	if err != nil || !sel.Matches(labels.Set(d.Spec.Template.Labels)) {
		t.Errorf("%s: Deployment %q: its selector does not match its pod labels (%v)", where, d.Name, err)
	}
	if spec.TerminationGracePeriodSeconds == nil || time.Duration(*spec.TerminationGracePeriodSeconds)*time.Second < workerDrain {
		t.Errorf("%s: Deployment %q: terminationGracePeriodSeconds must be at least %.0f so porch worker can drain", where, d.Name, workerDrain.Seconds())
	}
	if len(spec.Containers) != 1 {
		t.Fatalf("%s: Deployment %q: want one container, the worker; found %d", where, d.Name, len(spec.Containers))
	}
	c := &spec.Containers[0]
	if len(c.Args) == 0 || c.Args[0] != "worker" {
		t.Errorf("%s: Deployment %q: args %q do not start `porch worker`", where, d.Name, c.Args)
	}
	checkPorchArgs(t, where+": Deployment "+d.Name, c.Args)
	if err := imagePinned(c.Image); err != nil {
		t.Errorf("%s: Deployment %q: %v", where, d.Name, err)
	}
	checkResources(t, where, d.Name, c.Resources)
	checkHealth(t, where+": Deployment "+d.Name, c)
	for _, e := range c.Env {
		if e.Value != "" && secretName.MatchString(e.Name) {
			t.Errorf("%s: Deployment %q: %s is written inline: take it from a Secret", where, d.Name, e.Name)
		}
	}
	for _, from := range c.EnvFrom {
		if from.ConfigMapRef == nil {
			continue
		}
		found := false
		for _, cm := range m.configMaps {
			if cm.Name != from.ConfigMapRef.Name {
				continue
			}
			found = true
			for _, k := range sortedKeys(cm.Data) {
				if !readsEnv(t, k) {
					t.Errorf("%s: ConfigMap %q sets %s, which porch does not read", m.where[cm], cm.Name, k)
				}
			}
		}
		if !found {
			t.Errorf("%s: Deployment %q: envFrom names ConfigMap %q, which kubernetes/ does not define", where, d.Name, from.ConfigMapRef.Name)
		}
	}
}

// metricsPort is where the manifests' workers serve /metrics, /healthz and
// /readyz (porch worker --metrics-address).
const metricsPort = 9464

// checkHealth holds a worker container to its metrics endpoint: the flag
// on metricsPort, a port named metrics, a liveness probe on /healthz and a
// readiness probe on /readyz.
func checkHealth(t *testing.T, where string, c *corev1.Container) {
	if got := flagValue(c.Args, "--metrics-address"); got != fmt.Sprintf(":%d", metricsPort) {
		t.Errorf("%s: want --metrics-address :%d (metrics and health), found %q", where, metricsPort, got)
	}
	hasPort := false
	for _, p := range c.Ports {
		hasPort = hasPort || p.Name == "metrics" && p.ContainerPort == metricsPort
	}
	if !hasPort {
		t.Errorf("%s: want a container port named metrics on %d, for Prometheus and the probes", where, metricsPort)
	}
	for _, probe := range []struct {
		name, path string
		p          *corev1.Probe
	}{{"livenessProbe", "/healthz", c.LivenessProbe}, {"readinessProbe", "/readyz", c.ReadinessProbe}} {
		if probe.p == nil || probe.p.HTTPGet == nil || probe.p.HTTPGet.Path != probe.path || probe.p.HTTPGet.Port.String() != "metrics" {
			t.Errorf("%s: want a %s: httpGet %s on port metrics", where, probe.name, probe.path)
		}
	}
}

// flagValue is the value of flag in args (--flag v or --flag=v), "" when
// absent.
func flagValue(args []string, flag string) string {
	for i, a := range args {
		if a == flag && i+1 < len(args) {
			return args[i+1]
		}
		if v, ok := strings.CutPrefix(a, flag+"="); ok {
			return v
		}
	}
	return ""
}

// checkResources holds a container to the instance-type rules: CPU and
// memory requested, limits not below requests, GPUs only in limits.
func checkResources(t *testing.T, where, name string, r corev1.ResourceRequirements) {
	for _, res := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		if q, ok := r.Requests[res]; !ok || q.IsZero() {
			t.Errorf("%s: Deployment %q: requests.%s is missing or zero", where, name, res)
		}
	}
	for res, req := range r.Requests {
		if lim, ok := r.Limits[res]; ok && lim.Cmp(req) < 0 {
			t.Errorf("%s: Deployment %q: limits.%s (%s) is below requests.%s (%s)", where, name, res, lim.String(), res, req.String())
		}
	}
	if _, ok := r.Requests["nvidia.com/gpu"]; ok {
		t.Errorf("%s: Deployment %q: nvidia.com/gpu belongs in limits only", where, name)
	}
}

func (m *manifests) checkScaledObject(t *testing.T, so *scaledObject) {
	where := m.where[so]
	d := m.deployment(so.Spec.ScaleTargetRef.Name)
	if d == nil {
		t.Errorf("%s: ScaledObject %q scales %q, which is not a Deployment in kubernetes/", where, so.Name, so.Spec.ScaleTargetRef.Name)
		return
	}
	lo, hi := so.Spec.MinReplicaCount, so.Spec.MaxReplicaCount
	if lo == nil || hi == nil || *lo < 0 || *lo > *hi {
		t.Errorf("%s: ScaledObject %q: want 0 <= minReplicaCount (min_instances) <= maxReplicaCount (max_instances)", where, so.Name)
	}
	if len(so.Spec.Triggers) == 0 {
		t.Errorf("%s: ScaledObject %q has no trigger", where, so.Name)
	}
	c := &d.Spec.Template.Spec.Containers[0]
	activityQueues, workflows := workerQueues(c.Args)
	env := m.envOf(c)
	for _, tr := range so.Spec.Triggers {
		if tr.Type != "temporal" {
			t.Errorf("%s: ScaledObject %q: trigger %q: porch workers scale on their Temporal task queue (type: temporal)", where, so.Name, tr.Type)
			continue
		}
		checkTemporalTrigger(t, where+": ScaledObject "+so.Name, tr.Metadata, env)
		q := tr.Metadata["taskQueue"]
		types := strings.Split(tr.Metadata["queueTypes"], ",")
		if tr.Metadata["queueTypes"] == "" {
			types = []string{"workflow"} // KEDA's default
		}
		servesActivities := slices.Contains(activityQueues, q)
		if !servesActivities && !(workflows && q == plan.DefaultTaskQueue) {
			t.Errorf("%s: ScaledObject %q follows task queue %q, but %q serves %q", where, so.Name, q, d.Name, activityQueues)
		}
		if servesActivities && !slices.Contains(types, "activity") {
			t.Errorf("%s: ScaledObject %q: steps are activity tasks on %q: queueTypes needs activity (KEDA counts only workflow tasks by default)", where, so.Name, q)
		}
		if workflows && q == plan.DefaultTaskQueue && !slices.Contains(types, "workflow") {
			t.Errorf("%s: ScaledObject %q: %q runs porch's workflows: queueTypes needs workflow", where, so.Name, d.Name)
		}
	}
}

// checkTemporalTrigger checks a temporal trigger's metadata against KEDA's
// documented keys and values.
func checkTemporalTrigger(t *testing.T, where string, md map[string]string, env map[string]bool) {
	for _, k := range sortedKeys(md) {
		if !slices.Contains(temporalTriggerKeys, k) {
			t.Errorf("%s: unknown temporal trigger key %q: KEDA's temporal scaler reads %s", where, k, strings.Join(temporalTriggerKeys, ", "))
		}
	}
	if md["taskQueue"] == "" {
		t.Errorf("%s: the temporal trigger needs taskQueue", where)
	}
	switch {
	case md["endpoint"] == "" && md["endpointFromEnv"] == "":
		t.Errorf("%s: the temporal trigger needs endpoint or endpointFromEnv", where)
	case md["endpointFromEnv"] != "" && !env[md["endpointFromEnv"]]:
		t.Errorf("%s: endpointFromEnv names %s, which the worker container does not have", where, md["endpointFromEnv"])
	}
	for _, k := range []string{"targetQueueSize", "activationTargetQueueSize"} {
		if v, ok := md[k]; ok {
			if n, ok := atoi(v); !ok || n < 0 {
				t.Errorf("%s: %s %q is not a whole number", where, k, v)
			}
		}
	}
	if v, ok := md["queueTypes"]; ok {
		for _, typ := range strings.Split(v, ",") {
			if !slices.Contains([]string{"workflow", "activity", "nexus"}, typ) {
				t.Errorf("%s: queueTypes %q: each type is workflow, activity or nexus", where, v)
			}
		}
	}
}
