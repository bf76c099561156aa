package cluster

import (
	"bufio"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// metricsPort is where each worker serves /metrics, on its namespace's
// address.
const metricsPort = "9464"

// checkMetrics scrapes every worker's /metrics, as Prometheus would from
// outside their namespaces, after one undisturbed run: together they
// counted each of the run's steps and mini-batches once, each worker with
// its own share.
func (c *cluster) checkMetrics() {
	t := c.t
	total := map[string]float64{}
	for _, w := range c.workers {
		text := scrape(t, "http://"+w.Node.ip+":"+metricsPort+"/metrics")
		mb := sum(text, "porch_minibatches_processed_total", `compute="alpha"`)
		t.Logf("worker %s: %g mini-batches of compute alpha", w.Name, mb)
		total["mini-batches"] += mb
		total["failed mini-batches"] += sum(text, "porch_minibatches_failed_total", "")
		total["parallel steps"] += sum(text, "porch_steps_succeeded_total", `step_type="parallel"`)
		total["sweep steps"] += sum(text, "porch_steps_succeeded_total", `step_type="sweep"`)
		total["failed steps"] += sum(text, "porch_steps_failed_total", "")
	}
	want := map[string]float64{"mini-batches": items, "failed mini-batches": 0, "parallel steps": 1,
		"sweep steps": 1, "failed steps": 0}
	assert.Equal(t, want, total, "the workers' counters after one run")
}

// scrape reads a /metrics page.
func scrape(t *testing.T, url string) string {
	t.Helper()
	client := &http.Client{Timeout: 10 * time.Second}
	resp, err := client.Get(url)
	require.NoError(t, err, "scrape %s", url)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode, "scrape %s", url)
	var b strings.Builder
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		b.WriteString(sc.Text())
		b.WriteByte('\n')
	}
	require.NoError(t, sc.Err())
	return b.String()
}

// sum adds the samples of a metric in Prometheus's text format whose
// labels contain label (any sample when label is "").
func sum(text, name, label string) float64 {
	var total float64
	for _, line := range strings.Split(text, "\n") {
		rest, ok := strings.CutPrefix(line, name)
		if !ok || (rest != "" && rest[0] != '{' && rest[0] != ' ') {
			continue
		}
		labels, value := "", rest
		if strings.HasPrefix(rest, "{") {
			end := strings.LastIndex(rest, "}")
			if end < 0 {
				continue
			}
			labels, value = rest[:end+1], rest[end+1:]
		}
		if label != "" && !strings.Contains(labels, label) {
			continue
		}
		fields := strings.Fields(value)
		if len(fields) == 0 {
			continue
		}
		if v, err := strconv.ParseFloat(fields[0], 64); err == nil {
			total += v
		}
	}
	return total
}
