package deploy

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/porch-pipelines/porch/internal/monitoring"
	"github.com/porch-pipelines/porch/telemetry"
)

// dashboard is the part of a Grafana dashboard the test reads.
type dashboard struct {
	Title  string `json:"title"`
	UID    string `json:"uid"`
	Panels []struct {
		Title   string `json:"title"`
		Targets []struct {
			Expr string `json:"expr"`
		} `json:"targets"`
	} `json:"panels"`
	Templating struct {
		List []struct {
			Name       string `json:"name"`
			Definition string `json:"definition"`
		} `json:"list"`
	} `json:"templating"`
}

// metricName finds the metric names in a PromQL expression.
var metricName = regexp.MustCompile(`\b(?:porch|temporal)_[a-z0-9_]+\b`)

// TestGrafanaDashboard checks that every query of grafana/porch.json names
// a metric a porch worker exports: one of porch's own (package telemetry)
// or one of the Temporal SDK's, read from the SDK's source in the module
// cache (the version go.mod names).
func TestGrafanaDashboard(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("grafana", "porch.json"))
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	if err := json.Unmarshal(data, &d); err != nil {
		t.Fatalf("grafana/porch.json: %v", err)
	}
	if d.Title == "" || d.UID == "" || len(d.Panels) == 0 {
		t.Fatalf("grafana/porch.json: want a title, a uid and panels")
	}
	porch := map[string]bool{}
	for _, m := range telemetry.Metrics() {
		porch[m.Name] = true
	}
	sdk := sdkMetricNames(t)
	used := map[string]bool{}
	check := func(where, expr string) {
		names := metricName.FindAllString(expr, -1)
		if len(names) == 0 {
			t.Errorf("%s: %q names no porch_ or temporal_ metric", where, expr)
		}
		for _, n := range names {
			used[n] = true
			if !exported(n, porch, sdk) {
				t.Errorf("%s: %s is not a metric porch exports (telemetry.Metrics, or the Temporal SDK's)", where, n)
			}
		}
	}
	for _, p := range d.Panels {
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, tg := range p.Targets {
			check("panel "+p.Title, tg.Expr)
			checkPorchOnly(t, "panel "+p.Title, tg.Expr)
		}
	}
	for _, v := range d.Templating.List {
		if v.Definition != "" {
			check("variable "+v.Name, v.Definition)
		}
	}
	for name := range porch {
		if !used[name] && !used[name+"_bucket"] && !used[name+"_count"] {
			t.Errorf("no panel shows %s", name)
		}
	}
}

// sdkSelector matches a Temporal SDK metric in a query with the label
// matchers that follow it.
var sdkSelector = regexp.MustCompile(`\b(temporal_[a-z0-9_]+)\b(\{[^}]*\})?`)

// checkPorchOnly fails a query that selects a Temporal SDK metric without
// service_name="porch": the Temporal server's own system worker exports
// the same names (temporal_worker_task_slots_used, ...) from the server's
// metrics endpoint, which the same Prometheus scrapes.
func checkPorchOnly(t *testing.T, where, expr string) {
	t.Helper()
	want := monitoring.ServiceLabel + `="` + monitoring.ServiceName + `"`
	for _, m := range sdkSelector.FindAllStringSubmatch(expr, -1) {
		if !strings.Contains(m[2], want) {
			t.Errorf("%s: %s is not filtered to porch's workers: select it with {%s}, or the Temporal server's system worker is counted too", where, m[1], want)
		}
	}
}

// exported says whether name, as a query writes it, is a series porch's
// workers export: a histogram's _bucket, _sum and _count are its own.
func exported(name string, porch, sdk map[string]bool) bool {
	base := name
	for _, s := range []string{"_bucket", "_sum", "_count"} {
		if b, ok := strings.CutSuffix(name, s); ok && (porch[b] || strings.HasSuffix(b, "_seconds")) {
			base = b
		}
	}
	if strings.HasPrefix(base, "porch_") {
		return porch[base]
	}
	// The SDK's counters show with _total, its timers in seconds.
	for _, s := range []string{"_total", "_seconds"} {
		if b, ok := strings.CutSuffix(base, s); ok && sdk[b] {
			return true
		}
	}
	return sdk[base]
}

// sdkConst matches the SDK's metric name constants: Name = Other + "suffix".
var sdkConst = regexp.MustCompile(`(?m)^\s*(\w+)\s*=\s*(\w+)\s*\+\s*"([a-z0-9_]+)"`)

// sdkMetricNames reads the SDK's metric names from its source.
func sdkMetricNames(t *testing.T) map[string]bool {
	t.Helper()
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "go.temporal.io/sdk").Output()
	if err != nil {
		t.Fatalf("find the Temporal SDK's source: go list -m go.temporal.io/sdk: %v", err)
	}
	src, err := os.ReadFile(filepath.Join(strings.TrimSpace(string(out)), "internal", "common", "metrics", "constants.go"))
	if err != nil {
		t.Fatalf("read the Temporal SDK's metric names: %v", err)
	}
	values := map[string]string{"TemporalMetricsPrefix": "temporal_"}
	names := map[string]bool{}
	for _, m := range sdkConst.FindAllStringSubmatch(string(src), -1) {
		prefix, ok := values[m[2]]
		if !ok {
			continue
		}
		values[m[1]] = prefix + m[3]
		names[prefix+m[3]] = true
	}
	if !names["temporal_request"] || !names["temporal_request_failure"] {
		t.Fatalf("the Temporal SDK's metric names were not found in its constants.go: found %d", len(names))
	}
	return names
}
