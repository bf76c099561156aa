package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/porch-pipelines/porch/graph"
	"github.com/porch-pipelines/porch/internal/devserver"
)

// chromiumPath is Debian's Chromium, which playwright-core drives.
const chromiumPath = "/usr/bin/chromium"

// envScreenshots names a folder the browser test writes the page's
// screenshots to (docs/ regenerates docs/ui.md's).
const envScreenshots = "PORCH_UI_SCREENSHOTS"

// browserDriver finds node and playwright-core, or skips the test.
func browserDriver(t *testing.T) (node, nodePath string) {
	if _, err := os.Stat(chromiumPath); err != nil {
		t.Skip("no " + chromiumPath + " (apt-get install chromium): the page is not checked in a browser")
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not on PATH: the page is not checked in a browser")
	}
	out, err := exec.Command("npm", "root", "-g").Output()
	root := strings.TrimSpace(string(out))
	if err != nil || root == "" {
		t.Skip("npm root -g failed: playwright-core cannot be found, the page is not checked in a browser")
	}
	if _, err := os.Stat(filepath.Join(root, "playwright-core", "package.json")); err != nil {
		t.Skip("playwright-core is not installed globally (npm install -g playwright-core): the page is not checked in a browser")
	}
	return node, root
}

// pageDriver runs testdata/ui/check.js in one mode and returns what it
// measured.
type pageDriver struct {
	t              *testing.T
	node, nodePath string
	base           string
	script         string
	args           map[string]any
}

func (d *pageDriver) run(mode, runID string, extra map[string]any) map[string]float64 {
	d.t.Helper()
	args := map[string]any{}
	for k, v := range d.args {
		args[k] = v
	}
	for k, v := range extra {
		args[k] = v
	}
	data, err := json.Marshal(args)
	require.NoError(d.t, err)
	cmd := exec.Command(d.node, d.script, mode, d.base, runID, string(data))
	cmd.Env = append(os.Environ(), "NODE_PATH="+d.nodePath)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(d.t, err, "check.js %s: %s(a screenshot of the page is in %s)", mode, stderr.String(), args["failDir"])
	var figures map[string]float64
	require.NoError(d.t, json.Unmarshal(out, &figures), "check.js %s printed %q", mode, out)
	return figures
}

// TestPageInBrowser opens porch dev's page in headless Chromium, driven by
// playwright-core (testdata/ui/check.js): a run of a command chain, a
// parallel step with a failing mini-batch, a sweep and a nested pipeline
// is drawn with its edges, coloured as its steps finish without a reload,
// its first step's log followed and its metrics shown; the parallel
// step's progress and failed mini-batch, the sweep's chart (a point per
// trial, the best marked) and sortable table are checked; the nested
// pipeline collapses. The run again shows reused and skipped steps, and
// the run list filters by status and experiment. Last, a 500-step run's
// page load is measured.
func TestPageInBrowser(t *testing.T) {
	node, nodePath := browserDriver(t)
	dir := t.TempDir()
	t.Setenv(envHome, filepath.Join(dir, "home"))
	t.Setenv(envAddress, "")
	// The sweep's trial declares a curated environment: its steps run on
	// the host, whatever container runtime this machine has.
	t.Setenv(envRuntime, "host")
	work := filepath.Join(dir, "pipeline")
	require.NoError(t, os.CopyFS(work, os.DirFS(filepath.Join("testdata", "ui"))))
	shots := os.Getenv(envScreenshots)
	if shots != "" {
		shots, _ = filepath.Abs(shots)
	}
	addr, ui := startDevForPage(t, dir)
	d := &pageDriver{t: t, node: node, nodePath: nodePath, base: ui + devserver.PagesPrefix,
		script: filepath.Join(work, "check.js"),
		args:   map[string]any{"chromium": chromiumPath, "palette": graph.Palette, "shots": shots, "failDir": dir}}

	gate := filepath.Join(dir, "gate")
	first := submit(t, addr, filepath.Join(work, "live.yml"), "--set", "inputs.gate="+gate)
	d.run("live", first, map[string]any{"gate": gate})
	second := submit(t, addr, filepath.Join(work, "live.yml"), "--set", "inputs.gate="+gate)
	d.run("reused", second, map[string]any{"first": first})

	large := filepath.Join(dir, "large.yml")
	require.NoError(t, os.WriteFile(large, []byte(largePipeline(500)), 0o644))
	big := submit(t, addr, large, "--set", "inputs.gate="+filepath.Join(dir, "never"))
	f := d.run("large", big, map[string]any{"steps": 500, "click": "c250"})
	t.Logf("500-step run: page drawn %.0f ms after navigation (placing and drawing it %.0f ms, %.0f ms on a reload; elkjs alone lays it out in %.0f ms "+
		"in the same page); longest main-thread task while polling %.0f ms; a click opens the step's panel in %.0f ms",
		f["loadMs"], f["firstLayoutMs"], f["layoutMs"], f["elkMs"], f["longestTaskMs"], f["clickMs"])
	// The page's own work against elkjs's in the same conditions, both
	// warm (the faster of the page's first placing and a reload's); then
	// bounds for a machine whose two cores are shared with the server, its
	// worker, the browser and other tests (docs/ui.md has the figures).
	require.Less(t, 3*f["layoutMs"], f["elkMs"], "placing the layers and drawing them takes a third of elkjs's layout at most")
	require.Less(t, f["loadMs"], 5000.0, "the 500-step page loads")
	require.Less(t, f["clickMs"], 1000.0, "the page answers a click")
	require.Less(t, f["longestTaskMs"], 500.0, "no long task blocks the page while it polls")
	require.Equal(t, ExitOK, Run(context.Background(), []string{"job", "cancel", "--address", addr, big}, nil, &syncBuffer{}, &syncBuffer{}))
}

// startDevForPage runs porch dev in-process on free ports until the test
// ends, and returns its frontend and web UI addresses.
func startDevForPage(t *testing.T, dir string) (addr, ui string) {
	port, err := devserver.FreePort()
	require.NoError(t, err)
	uiPort, err := devserver.FreePort()
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	var stdout, stderr syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- Run(ctx, []string{"dev", "--port", fmt.Sprint(port), "--ui-port", fmt.Sprint(uiPort), "--fleet=false",
			"--db", filepath.Join(dir, "dev.db")}, nil, &stdout, &stderr)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	line := regexp.MustCompile(`porch UI: (http://\S+)/porch/`)
	// Waits for porch dev's banner, printed once its worker runs.
	require.Eventually(t, func() bool { return line.MatchString(stdout.String()) }, 2*time.Minute, 50*time.Millisecond,
		"porch dev did not start: %s", &stderr)
	return fmt.Sprintf("127.0.0.1:%d", port), line.FindStringSubmatch(stdout.String())[1]
}

// submit starts a run on porch dev and returns its id.
func submit(t *testing.T, addr, file string, args ...string) string {
	var stdout, stderr syncBuffer
	code := Run(context.Background(), append([]string{"run", "--detach", "--address", addr, file}, args...), nil, &stdout, &stderr)
	require.Equal(t, ExitOK, code, "porch run: %s", stderr.String())
	return strings.TrimSpace(strings.SplitN(stdout.String(), "\n", 2)[0])
}

// largePipeline is a run of n command steps: a first step waiting for a
// gate file that never comes, then chains of ten steps after it, so the run
// stays running with one step running and the others queued.
func largePipeline(n int) string {
	var b strings.Builder
	b.WriteString("type: pipeline\nname: ui-large\ninputs:\n  gate: /nonexistent\njobs:\n")
	b.WriteString("  c0:\n    command: while [ ! -e ${{inputs.gate}} ]; do sleep 1; done\n" +
		"    inputs:\n      gate: ${{parent.inputs.gate}}\n    outputs:\n      out:\n")
	for i := 1; i < n; i++ {
		prev := i - 1
		if (i-1)%10 == 0 {
			prev = 0
		}
		fmt.Fprintf(&b, "  c%d:\n    command: ls ${{inputs.in}}\n    inputs:\n      in: ${{parent.jobs.c%d.outputs.out}}\n"+
			"    outputs:\n      out:\n", i, prev)
	}
	return b.String()
}
