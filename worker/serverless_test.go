package worker_test

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	enums "go.temporal.io/api/enums/v1"

	"github.com/porch-pipelines/porch/compiler/plan"
	"github.com/porch-pipelines/porch/worker"
)

// registerServerlessTypes applies three instance types, cheapest first:
// sl-small (2 CPU, 4Gi), sl-medium (2 CPU, 8Gi) and sl-large (4 CPU,
// 16Gi), and returns the catalogue.
func registerServerlessTypes(t *testing.T) *plan.Catalog {
	it := func(name string, cpu, memGi int64) plan.InstanceType {
		r := plan.ResourceList{MilliCPU: cpu * 1000, MemoryBytes: memGi << 30}
		return plan.InstanceType{Name: name, Requests: r, Limits: r}
	}
	return applyInstanceTypes(t, "", it("sl-small", 2, 4), it("sl-medium", 2, 8), it("sl-large", 4, 16))
}

// TestServerlessStepsRunOnTheCheapestLiveInstanceTypeThatFits runs
// serverless steps with two worker processes: one serving sl-small, one
// sl-large; sl-medium has no worker. A step asking for an Azure VM size of
// 2 CPUs and 4Gi runs on sl-small, one asking for 4 CPUs and 16Gi on
// sl-large (sl-medium would fit neither, and is not live anyway), one
// asking for 2 CPUs and 8Gi skips sl-medium, which has no worker, for sl-large, and one
// naming sl-large runs there as is. Each step's log says where it runs.
func TestServerlessStepsRunOnTheCheapestLiveInstanceTypeThatFits(t *testing.T) {
	home := t.TempDir()
	w := startWorker(t, home) // its serverless types are those applied before it started
	t.Cleanup(w.Stop)
	cat := registerServerlessTypes(t)
	homeSmall, homeLarge := t.TempDir(), t.TempDir()
	startRoutedWorkerProcess(t, homeSmall, "", "node-small", worker.Options{
		InstanceTypes: []string{"sl-small"}, Capacity: plan.ResourceList{MilliCPU: 2000, MemoryBytes: 4 << 30}})
	startRoutedWorkerProcess(t, homeLarge, "", "node-large", worker.Options{
		InstanceTypes: []string{"sl-large"}, Capacity: plan.ResourceList{MilliCPU: 8000, MemoryBytes: 32 << 30}})
	waitForPollers(t, plan.ServerlessTaskQueue("sl-small"), plan.ServerlessTaskQueue("sl-large"))

	dir := t.TempDir()
	logFile := filepath.Join(dir, "steps.log")
	step := func(name, instanceType string) string {
		return fmt.Sprintf(`  %s:
    compute: azureml:serverless
    resources:
      instance_type: %s
    command: echo "%s $(pwd)" >> %s
`, name, instanceType, name, logFile)
	}
	src := "type: pipeline\njobs:\n" + step("f2", "Standard_F2s_v2") + step("d4", "Standard_D4s_v3") +
		step("d2", "Standard_D2s_v3") + step("named", "sl-large")
	p := compileAgainst(t, dir, src, cat)
	h := &harness{t: t, home: home}
	_, err := h.run(p)
	require.NoError(t, err)

	data, err := os.ReadFile(logFile)
	require.NoError(t, err)
	where := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		name, wd, _ := strings.Cut(line, " ")
		where[name] = wd
	}
	for name, h := range map[string]string{"f2": homeSmall, "d4": homeLarge, "d2": homeLarge, "named": homeLarge} {
		assert.True(t, strings.HasPrefix(where[name], h), "step %s ran in %s, want under %s", name, where[name], h)
	}
	for name, want := range map[string]string{
		"f2": "porch: serverless: running on instance type sl-small (2 CPU, 4Gi): the cheapest of 2 live instance types " +
			"that fit the step's 2 CPU, 4Gi (Standard_F2s_v2)",
		"d4": "porch: serverless: running on instance type sl-large (4 CPU, 16Gi): the only live instance type that fits " +
			"the step's 4 CPU, 16Gi (Standard_D4s_v3)",
		"d2": "porch: serverless: running on instance type sl-large (4 CPU, 16Gi): the only live instance type that fits " +
			"the step's 2 CPU, 8Gi (Standard_D2s_v3)",
	} {
		assert.Contains(t, stepLog(t, name, homeSmall, homeLarge), want)
	}
	assert.NotContains(t, stepLog(t, "named", homeLarge), "serverless:", "a named instance type is used as is")
}

// stepLog returns the std_log.txt of a step found under one of homes.
func stepLog(t *testing.T, step string, homes ...string) string {
	t.Helper()
	suffix := filepath.Join(step, "artifacts", "user_logs", "std_log.txt")
	for _, home := range homes {
		var found string
		_ = filepath.WalkDir(home, func(path string, d fs.DirEntry, err error) error {
			if err == nil && strings.HasSuffix(path, string(filepath.Separator)+suffix) {
				found = path
			}
			return nil
		})
		if found != "" {
			data, err := os.ReadFile(found)
			require.NoError(t, err)
			return string(data)
		}
	}
	t.Fatalf("no log of step %s under %v", step, homes)
	return ""
}

// waitForPollers waits until every queue has a poller: the worker
// processes are up.
func waitForPollers(t *testing.T, queues ...string) {
	t.Helper()
	for _, q := range queues {
		require.Eventually(t, func() bool {
			resp, err := temporalClient.DescribeTaskQueue(context.Background(), q, enums.TASK_QUEUE_TYPE_ACTIVITY)
			return err == nil && len(resp.GetPollers()) > 0
		}, time.Minute, 100*time.Millisecond, "a worker process polls %s", q)
	}
}
