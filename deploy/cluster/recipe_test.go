package cluster

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// recipePage is the page whose commands TestRecipe runs.
const recipePage = "docs/temporal-cluster.md"

// recipe is a run of recipePage's commands.
type recipe struct {
	t    *testing.T
	root string // the repository
	// values are the settings the test gives in place of the page's.
	values map[string]string
	// env is the environment the page's commands left: the server's
	// address and the client certificates.
	env []string
	log string // the script's output
}

// TestRecipe runs the shell blocks of docs/temporal-cluster.md, the
// cluster without containers, as they are written: in order, as one bash
// script from the repository's root, with the test's own values (a
// temporary folder, fresh databases, free ports) set right after the
// page's settings block. On the server and worker the page started, it
// then checks the Kubernetes HPA alternative and the Grafana dashboard
// against real scrapes.
func TestRecipe(t *testing.T) {
	needPostgres(t)
	for _, tool := range []string{"bash", "openssl", "temporal", "timeout"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s runs %s, which is not on PATH (the temporal CLI: go install github.com/temporalio/cli/cmd/temporal@v1.5.1)", recipePage, tool)
		}
	}
	root, err := filepath.Abs(filepath.Join("..", ".."))
	require.NoError(t, err)
	blocks := shellBlocks(t, filepath.Join(root, recipePage))
	r := &recipe{t: t, root: root}
	started := time.Now()
	r.run(blocks)
	t.Logf("%s ran in %s", recipePage, time.Since(started).Round(100*time.Millisecond))
	t.Run("hpa", r.checkHPA)
	t.Run("dashboard", r.checkDashboard)
}

// shellBlocks are the ```sh blocks of a Markdown page, in order.
func shellBlocks(t *testing.T, page string) []string {
	t.Helper()
	data, err := os.ReadFile(page)
	require.NoError(t, err)
	var blocks []string
	var cur *strings.Builder
	for _, line := range strings.Split(string(data), "\n") {
		switch {
		case cur == nil && strings.TrimSpace(line) == "```sh":
			cur = &strings.Builder{}
		case cur != nil && strings.TrimSpace(line) == "```":
			blocks = append(blocks, cur.String())
			cur = nil
		case cur != nil:
			cur.WriteString(line + "\n")
		}
	}
	require.Nil(t, cur, "%s: a ```sh block is not closed", page)
	require.NotEmpty(t, blocks, "%s has no ```sh block", page)
	return blocks
}

// exported are the variables a block exports.
var exported = regexp.MustCompile(`(?:^|\s)([A-Z_][A-Z0-9_]*)=`)

// run runs the page's blocks and keeps the environment they leave. The
// server and worker they start in the background are killed, and the
// databases dropped, when the test ends.
func (r *recipe) run(blocks []string) {
	t := r.t
	cluster := t.TempDir()
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	db := "porch_recipe_" + hex.EncodeToString(b)
	ports := freePorts(t, "127.0.0.1", 12)
	r.values = map[string]string{
		"CLUSTER": cluster, "POSTGRES_SEEDS": pgHost, "DB_PORT": pgPort, "POSTGRES_USER": pgUser, "POSTGRES_PWD": "",
		"DBNAME": db, "VISIBILITY_DBNAME": db + "_visibility", "FRONTEND_BIND_ON_IP": "127.0.0.1",
		"FRONTEND_GRPC_PORT": strconv.Itoa(ports[0]), "PROMETHEUS_ENDPOINT": "127.0.0.1:" + strconv.Itoa(ports[1]),
	}
	settings := blocks[0]
	for name := range r.values {
		if !slices.ContainsFunc(exported.FindAllStringSubmatch(settings, -1), func(m []string) bool { return m[1] == name }) {
			t.Fatalf("%s: the first ```sh block, the settings, no longer sets %s: the test gives it its own value there; change the test with the page", recipePage, name)
		}
	}
	var script strings.Builder
	script.WriteString("set -euo pipefail\n" + settings + "# TestRecipe's values\n")
	for _, name := range sortedKeys(r.values) {
		fmt.Fprintf(&script, "export %s=%s\n", name, shellQuote(r.values[name]))
	}
	for i, b := range blocks[1:] {
		fmt.Fprintf(&script, "printf '%s %d %%s\\n' \"$(date +%%s.%%N)\"\n", blockMark, i+1)
		script.WriteString(b)
	}
	fmt.Fprintf(&script, "printf '%s %d %%s\\n' \"$(date +%%s.%%N)\"\n", blockMark, len(blocks))
	fmt.Fprintf(&script, "env -0 >%s\n", shellQuote(filepath.Join(cluster, "recipe.env")))

	// The ports the page leaves at their defaults, and a porch home.
	env := []string{"PORCH_HOME=" + filepath.Join(cluster, "porch-home")}
	for i, name := range []string{"FRONTEND_HTTP_PORT", "HISTORY_GRPC_PORT", "MATCHING_GRPC_PORT", "WORKER_GRPC_PORT",
		"FRONTEND_MEMBERSHIP_PORT", "HISTORY_MEMBERSHIP_PORT", "MATCHING_MEMBERSHIP_PORT", "WORKER_MEMBERSHIP_PORT"} {
		env = append(env, name+"="+strconv.Itoa(ports[2+i]))
	}
	r.log = filepath.Join(t.TempDir(), "recipe.log")
	out, err := os.Create(r.log)
	require.NoError(t, err)
	defer out.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", script.String())
	cmd.Dir = r.root
	cmd.Env = append(withoutTemporalClient(os.Environ()), env...)
	cmd.Stdout, cmd.Stderr = out, out
	// Its own process group: the background server and worker stay in it
	// after bash exits, and end with it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { r.stop(cmd.Process.Pid, cluster, db) })
	if err := cmd.Wait(); err != nil {
		data, _ := os.ReadFile(r.log)
		t.Fatalf("%s's commands failed: %v; their output (last 8 KB):\n%s", recipePage, err, tail(data, 8<<10))
	}
	data, err := os.ReadFile(filepath.Join(cluster, "recipe.env"))
	require.NoError(t, err)
	for _, kv := range bytes.Split(data, []byte{0}) {
		if len(kv) > 0 {
			r.env = append(r.env, string(kv))
		}
	}
	log, _ := os.ReadFile(r.log)
	require.Regexp(t, `run hello-\w+ succeeded`, string(log), "the page's first run")
	t.Logf("the blocks took %s", blockTimes(string(log)))
}

// blockMark starts the line the script prints as each block starts.
const blockMark = "TestRecipe: block"

// blockTimes says how long each block after the settings took, from the
// marks in the script's output.
func blockTimes(log string) string {
	var starts []float64
	for _, line := range strings.Split(log, "\n") {
		var n int
		var at float64
		if _, err := fmt.Sscanf(line, blockMark+" %d %f", &n, &at); err == nil {
			starts = append(starts, at)
		}
	}
	var parts []string
	for i := 1; i < len(starts); i++ {
		parts = append(parts, fmt.Sprintf("%d: %.1f s", i, starts[i]-starts[i-1]))
	}
	return strings.Join(parts, ", ")
}

// stop kills the processes the page left in group pgid, waits until they
// are gone, and drops the databases; it shows the logs when the test
// failed.
func (r *recipe) stop(pgid int, cluster, db string) {
	t := r.t
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	deadline := time.Now().Add(30 * time.Second)
	for syscall.Kill(-pgid, 0) == nil {
		if time.Now().After(deadline) {
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
		}
		time.Sleep(100 * time.Millisecond) // another process group's exit: nothing to wait on
	}
	if t.Failed() {
		for _, f := range []string{filepath.Join(cluster, "temporal.log"), filepath.Join(cluster, "worker.log")} {
			data, _ := os.ReadFile(f)
			t.Logf("%s (last 4 KB):\n%s", f, tail(data, 4<<10))
		}
	}
	tool := filepath.Join(cluster, "bin", "temporal-sql-tool")
	if _, err := os.Stat(tool); err != nil {
		return
	}
	for _, name := range []string{db, db + "_visibility"} {
		out, err := exec.Command(tool, "--plugin", "postgres12", "--ep", pgHost, "-p", pgPort, "-u", pgUser,
			"--db", name, "drop-database", "--force").CombinedOutput()
		if err != nil && !strings.Contains(string(out), "does not exist") {
			t.Logf("drop database %s: %v: %s", name, err, tail(out, 2<<10))
		}
	}
}

// withoutTemporalClient is env without the Temporal client's variables:
// the page sets those it means.
func withoutTemporalClient(env []string) []string {
	return slices.DeleteFunc(slices.Clone(env), func(kv string) bool { return strings.HasPrefix(kv, "TEMPORAL_") })
}

// porch runs the porch the page built, in the environment it left, and
// returns its output.
func (r *recipe) porch(home string, args ...string) (string, error) {
	cmd := exec.Command(filepath.Join(r.values["CLUSTER"], "bin", "porch"), args...)
	cmd.Dir = r.root
	cmd.Env = append(slices.Clone(r.env), "PORCH_HOME="+home)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// startPorch starts a porch process that runs until the test ends.
func (r *recipe) startPorch(home string, args ...string) *exec.Cmd {
	t := r.t
	log, err := os.Create(filepath.Join(home, "porch.log"))
	require.NoError(t, err)
	cmd := exec.Command(filepath.Join(r.values["CLUSTER"], "bin", "porch"), args...)
	cmd.Dir = r.root
	cmd.Env = append(slices.Clone(r.env), "PORCH_HOME="+home)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		log.Close()
		if t.Failed() {
			data, _ := os.ReadFile(log.Name())
			t.Logf("porch %s (last 4 KB):\n%s", strings.Join(args, " "), tail(data, 4<<10))
		}
	})
	return cmd
}

// serverMetrics scrapes the metrics of the server the page started.
func (r *recipe) serverMetrics() ([]series, error) {
	return scrapeSeries("http://" + r.values["PROMETHEUS_ENDPOINT"] + "/metrics")
}

// scrapeSeries reads a /metrics page into series.
func scrapeSeries(url string) ([]series, error) {
	client := &httpClient
	resp, err := client.Get(url)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var b strings.Builder
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		b.WriteString(sc.Text() + "\n")
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if resp.StatusCode != 200 {
		return nil, errors.New(resp.Status)
	}
	return parseScrape(b.String())
}

// shellQuote quotes s for bash.
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
