package cluster

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	sigsyaml "sigs.k8s.io/yaml"
)

var httpClient = http.Client{Timeout: 10 * time.Second}

// adapterRule is a prometheus-adapter external rule.
type adapterRule struct {
	SeriesQuery string `yaml:"seriesQuery"`
	Resources   struct {
		Namespaced *bool `yaml:"namespaced"`
	} `yaml:"resources"`
	Name struct {
		As string `yaml:"as"`
	} `yaml:"name"`
	MetricsQuery string `yaml:"metricsQuery"`
}

// readmeAdapterRule reads the rule deploy/README.md gives for
// prometheus-adapter: the indented block that starts with externalRules:.
func readmeAdapterRule(t *testing.T, root string) adapterRule {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, "deploy", "README.md"))
	require.NoError(t, err)
	var block []string
	indent := ""
	for _, line := range strings.Split(string(data), "\n") {
		trimmed := strings.TrimLeft(line, " ")
		if block == nil && trimmed == "externalRules:" {
			indent = line[:len(line)-len(trimmed)]
			block = []string{trimmed}
			continue
		}
		if block != nil {
			if !strings.HasPrefix(line, indent+" ") {
				break
			}
			block = append(block, strings.TrimPrefix(line, indent))
		}
	}
	require.NotNil(t, block, "deploy/README.md: no indented block starting with externalRules:")
	var rules struct {
		ExternalRules []adapterRule `yaml:"externalRules"`
	}
	require.NoError(t, yaml.Unmarshal([]byte(strings.Join(block, "\n")), &rules), "deploy/README.md: the adapter rule")
	require.Len(t, rules.ExternalRules, 1, "deploy/README.md: the adapter rule")
	return rules.ExternalRules[0]
}

// hpaPipeline is one command step on the compute cpu-cluster, which no
// worker of the page serves: its step waits on the queue the HPA follows.
const hpaPipeline = `type: pipeline
name: backlog
jobs:
  wait:
    command: echo never runs here
    compute: azureml:cpu-cluster
`

// checkHPA checks deploy/kubernetes/hpa/ and the prometheus-adapter rule
// of deploy/README.md against the server's own metrics: with a step
// waiting on cpu-cluster's queue, the rule's query with the HPA's
// selector, evaluated on a scrape of the server, finds that backlog.
func (r *recipe) checkHPA(t *testing.T) {
	rule := readmeAdapterRule(t, r.root)
	data, err := os.ReadFile(filepath.Join(r.root, "deploy", "kubernetes", "hpa", "cpu-cluster-hpa.yaml"))
	require.NoError(t, err)
	var hpa autoscalingv2.HorizontalPodAutoscaler
	require.NoError(t, sigsyaml.UnmarshalStrict(data, &hpa))
	require.Len(t, hpa.Spec.Metrics, 1)
	ext := hpa.Spec.Metrics[0].External
	require.NotNil(t, ext, "the HPA scales on an external metric")
	require.Equal(t, rule.Name.As, ext.Metric.Name, "the HPA's metric is the one the adapter rule serves")
	require.False(t, rule.Resources.Namespaced == nil || *rule.Resources.Namespaced,
		"the rule says namespaced: false: Temporal's namespace label is not a Kubernetes namespace")
	seriesQuery, err := parseSelector(rule.SeriesQuery)
	require.NoError(t, err, "the rule's seriesQuery")
	var matchers []string
	for k, v := range ext.Metric.Selector.MatchLabels {
		matchers = append(matchers, fmt.Sprintf("%s=%q", k, v))
	}
	sort.Strings(matchers)
	query := strings.NewReplacer("<<.Series>>", seriesQuery.name, "<<.LabelMatchers>>", strings.Join(matchers, ",")).Replace(rule.MetricsQuery)
	t.Logf("the adapter's query for the HPA: %s", query)

	file := filepath.Join(t.TempDir(), "backlog.yml")
	require.NoError(t, os.WriteFile(file, []byte(hpaPipeline), 0o644))
	out, err := r.porch(t.TempDir(), "run", "--detach", file)
	require.NoError(t, err, "porch run --detach:\n%s", out)

	var got map[string]float64
	var last []series
	// Waits for matching to export the queue's backlog: every
	// matching.backlogMetricsEmitInterval (10 s in porch.yaml).
	ok := assert.Eventually(t, func() bool {
		if last, err = r.serverMetrics(); err != nil {
			return false
		}
		got, err = evalSumBy(query, last)
		return err == nil && len(got) == 1 && anyAtLeast(got, 1)
	}, 90*time.Second, time.Second, "the HPA's query %s never found the waiting step (last result %v, err %v)", query, got, err)
	if !ok {
		for _, s := range seriesQuery.selectAll(last) {
			if s.value > 0 {
				t.Logf("a backlog the server exports: %v %g", s.labels, s.value)
			}
		}
		return
	}
	t.Logf("the HPA's query finds %v", got)
}

func anyAtLeast(m map[string]float64, v float64) bool {
	for _, x := range m {
		if x >= v {
			return true
		}
	}
	return false
}

// sdkSelector is a Temporal SDK metric in a query, with its matchers.
var sdkSelector = regexp.MustCompile(`\btemporal_[a-z0-9_]+\b(?:\{[^}]*\})?`)

// dashPipeline is one command step on the compute dash, which the test's
// own worker serves: it makes that worker record activity metrics.
const dashPipeline = `type: pipeline
name: dash
jobs:
  a:
    command: echo dash
    compute: azureml:dash
`

// checkDashboard checks grafana/porch.json's temporal_* queries against
// real scrapes of a porch worker and of the Temporal server, which exports
// the SDK's metrics of its own system worker under the same names: each
// query selects none of the server's series, and the worker's series of
// every metric the worker exports.
func (r *recipe) checkDashboard(t *testing.T) {
	home := t.TempDir()
	addr := fmt.Sprintf("127.0.0.1:%d", freePorts(t, "127.0.0.1", 1)[0])
	r.startPorch(home, "worker", "--compute", "dash", "--metrics-address", addr)
	// Waits for the worker to poll (its readiness).
	require.Eventually(t, func() bool {
		resp, err := httpClient.Get("http://" + addr + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}, 60*time.Second, 200*time.Millisecond, "the dashboard's worker never became ready")
	file := filepath.Join(t.TempDir(), "dash.yml")
	require.NoError(t, os.WriteFile(file, []byte(dashPipeline), 0o644))
	out, err := r.porch(t.TempDir(), "run", file)
	require.NoError(t, err, "porch run:\n%s", out)

	worker, err := scrapeSeries("http://" + addr + "/metrics")
	require.NoError(t, err)
	server, err := r.serverMetrics()
	require.NoError(t, err)
	names := func(all []series) map[string]bool {
		m := map[string]bool{}
		for _, s := range all {
			m[s.name] = true
		}
		return m
	}
	workerNames, serverNames := names(worker), names(server)
	shared := 0
	for _, expr := range dashboardQueries(t, r.root) {
		for _, text := range sdkSelector.FindAllString(expr, -1) {
			sel, err := parseSelector(text)
			require.NoError(t, err, "the dashboard's %s", text)
			if serverNames[sel.name] {
				shared++
			}
			if n := len(sel.selectAll(server)); n > 0 {
				t.Errorf("the dashboard's %s selects %d series of the Temporal server (its system worker): filter it to porch's workers", text, n)
			}
			if workerNames[sel.name] && len(sel.selectAll(worker)) == 0 {
				t.Errorf("the dashboard's %s selects none of a porch worker's %s series", text, sel.name)
			}
		}
	}
	require.Positive(t, shared, "no dashboard metric is one the server exports too: the check above proves nothing")
	t.Logf("%d of the dashboard's temporal_* selectors name a metric the server exports too", shared)
}

// dashboardQueries are the queries of grafana/porch.json's panels.
func dashboardQueries(t *testing.T, root string) []string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, "deploy", "grafana", "porch.json"))
	require.NoError(t, err)
	var d struct {
		Panels []struct {
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	require.NoError(t, json.Unmarshal(data, &d))
	var out []string
	for _, p := range d.Panels {
		for _, tg := range p.Targets {
			out = append(out, tg.Expr)
		}
	}
	return out
}
