package worker_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"

	"github.com/porch-pipelines/porch/activities/objectstore"
	"github.com/porch-pipelines/porch/activities/objectstore/azuritetest"
	"github.com/porch-pipelines/porch/internal/cli"
)

// cliEnv makes the test binary run porch's command line (its arguments
// are porch's), so a test runs `porch dev` as a process of its own, as a
// user does.
const cliEnv = "PORCH_TEST_CLI"

func runCLI() int {
	return cli.Run(context.Background(), os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
}

// porch runs a porch command to its end with env added to the test's
// environment (less its Azure settings) and returns what it printed.
func porch(t *testing.T, env []string, args ...string) (string, error) {
	t.Helper()
	cmd := porchCommand(env, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

func porchCommand(env []string, args ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], args...)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "AZURE_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(append(cmd.Env, cliEnv+"=1"), env...)
	return cmd
}

// startPorchDev runs `porch dev` on free ports with env and waits until it
// records its address in PORCH_HOME/dev.json; stop interrupts it (as ^C
// does), waits for it to end and adds what it printed to printed.
func startPorchDev(t *testing.T, home string, env []string, printed *bytes.Buffer) (address string, stop func()) {
	t.Helper()
	record := filepath.Join(home, "dev.json")
	_ = os.Remove(record)
	cmd := porchCommand(env, "dev", "--port", "0", "--ui-port", "0", "--fleet=false")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	require.NoError(t, cmd.Start())
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	stop = func() {
		_ = cmd.Process.Signal(syscall.SIGINT)
		select {
		case <-done:
		case <-time.After(time.Minute):
			_ = cmd.Process.Kill()
			<-done
		}
		printed.Write(out.Bytes())
	}
	deadline := time.Now().Add(2 * time.Minute)
	for address == "" {
		var dev struct {
			Address string `json:"address"`
		}
		if b, err := os.ReadFile(record); err == nil && json.Unmarshal(b, &dev) == nil {
			address = dev.Address
		}
		select {
		case <-done:
			t.Fatalf("porch dev ended before it served:\n%s", out.String())
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			stop()
			t.Fatalf("porch dev did not write %s within 2 minutes:\n%s", record, out.String())
		}
	}
	return address, stop
}

// TestAzureSecretsReachNoHistoryDatabaseOrLog runs `porch dev` three
// times on one PORCH_HOME, its worker given an account key, then a SAS,
// then a connection string; each time a pipeline reads a wasbs:// input,
// writes an output to an azure_blob datastore registered from a file
// with inline credentials, and a managed step echoes the worker's Azure
// settings. Afterwards no secret is in any event of any workflow on the
// server (runs, the catalogue), in any file under PORCH_HOME (porch dev's
// SQLite database, its server and worker logs, the steps' working
// folders), in what porch dev and porch run printed, or in any blob of the
// container (the steps' logs and outputs).
func TestAzureSecretsReachNoHistoryDatabaseOrLog(t *testing.T) {
	srv, container := azuritetest.Start(t, azuritetest.Account)
	c, err := srv.Container(azuritetest.Account, container)
	require.NoError(t, err)
	_, err = c.NewBlockBlobClient("in/data.txt").UploadBuffer(context.Background(), []byte("alpha\n"), nil)
	require.NoError(t, err)
	sas, err := srv.SAS(azuritetest.Account, container, "rwdlac", time.Now().Add(time.Hour))
	require.NoError(t, err)
	secrets := map[string]string{"account key": azuritetest.Key, "SAS token": sas, "SAS signature": objectstoreSig(sas)}

	home, dir := t.TempDir(), t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "blob.yml"), []byte(fmt.Sprintf(`name: secretblob
type: azure_blob
account_name: %s
container_name: %s
credentials:
  account_key: %s
`, azuritetest.Account, container, azuritetest.Key)), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "pipeline.yml"), []byte(fmt.Sprintf(`type: pipeline
settings:
  default_datastore: azureml:secretblob
  force_rerun: true
jobs:
  copy:
    command: cat ${{inputs.data}} > ${{outputs.out}}/copy.txt
    inputs:
      data: {type: uri_file, path: "wasbs://%s@%s.blob.core.windows.net/in/data.txt", mode: download}
    outputs:
      out: {type: uri_folder}
  peek:
    identity:
      type: managed
    command: echo "key=$AZURE_STORAGE_KEY sas=$AZURE_STORAGE_SAS_TOKEN connection=$AZURE_STORAGE_CONNECTION_STRING"
`, container, azuritetest.Account)), 0o644))

	common := []string{"PORCH_HOME=" + home, "PORCH_RUNTIME=host"}
	endpoint := objectstore.EnvConnectionString + "=BlobEndpoint=" + srv.Endpoint(azuritetest.Account) + ";"
	account := objectstore.EnvStorageAccount + "=" + azuritetest.Account
	var (
		address string
		printed bytes.Buffer
	)
	for i, mode := range []struct {
		name string
		env  []string
	}{
		{"account key", []string{endpoint, account, objectstore.EnvStorageKey + "=" + azuritetest.Key}},
		{"SAS", []string{endpoint, account, objectstore.EnvStorageSAS + "=" + sas}},
		{"connection string", []string{objectstore.EnvConnectionString + "=" + srv.ConnectionString(azuritetest.Account)}},
	} {
		env := append(slices.Clone(common), mode.env...)
		var stop func()
		address, stop = startPorchDev(t, home, env, &printed)
		if i == 0 {
			out, err := porch(t, env, "datastore", "create", "-f", filepath.Join(dir, "blob.yml"))
			require.NoError(t, err, out)
			assert.Contains(t, out, "warning: credentials are not registered")
			printed.WriteString(out)
		}
		out, err := porch(t, env, "run", "--address", address, filepath.Join(dir, "pipeline.yml"))
		printed.WriteString(out)
		if err != nil {
			stop()
		}
		require.NoError(t, err, "%s: %s", mode.name, out)
		if i < 2 {
			stop()
			continue
		}
		// The last session's server holds every run: grep every event
		// of every workflow, the catalogue's included.
		tc, err := client.Dial(client.Options{HostPort: address, Logger: quietLogger{}})
		require.NoError(t, err)
		grepHistories(t, tc, secrets, 3)
		tc.Close()
		stop()
	}

	// Every file under PORCH_HOME: dev.db (and any journal beside it),
	// logs/dev-server.log and logs/dev-worker.log, the steps' logs and
	// outputs; and what porch dev and porch run printed.
	for what, secret := range secrets {
		assert.Empty(t, filesHolding(t, home, secret), "the %s is in these files", what)
		assert.NotContains(t, printed.String(), secret, "porch dev or porch run printed the %s", what)
	}
	// The greps can see: the database holds the runs' events in the clear,
	// the worker's log is written, and the managed step's log shows where
	// the secrets were.
	db, err := os.ReadFile(filepath.Join(home, "dev.db"))
	require.NoError(t, err)
	wal, _ := os.ReadFile(filepath.Join(home, "dev.db-wal"))
	assert.True(t, bytes.Contains(append(db, wal...), []byte("wasbs://"+container+"@")), "dev.db holds the pipelines' input URI")
	log, err := os.ReadFile(filepath.Join(home, "logs", "dev-worker.log"))
	require.NoError(t, err)
	assert.NotEmpty(t, log)
	// The steps' logs and outputs went to the blob container: no blob
	// holds a secret, and each run's managed step's log shows where they
	// were.
	var peeks []string
	pager := c.NewListBlobsFlatPager(nil)
	for pager.More() {
		page, err := pager.NextPage(context.Background())
		require.NoError(t, err)
		for _, item := range page.Segment.BlobItems {
			resp, err := c.NewBlobClient(*item.Name).DownloadStream(context.Background(), nil)
			require.NoError(t, err)
			body, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			require.NoError(t, err)
			for what, secret := range secrets {
				assert.NotContains(t, string(body), secret, "the %s is in blob %s", what, *item.Name)
			}
			if strings.Contains(*item.Name, "/peek/") && strings.HasSuffix(*item.Name, "/std_log.txt") {
				peeks = append(peeks, string(body))
			}
		}
	}
	assert.Len(t, peeks, 3, "each run's managed step wrote its log")
	for _, p := range peeks {
		// Each mode sets some of the three: what is set is redacted.
		assert.Regexp(t, `\nkey=(<redacted>)? sas=(<redacted>)? connection=<redacted>\n`, p)
		assert.Contains(t, p, "<redacted>")
	}
}

// grepHistories checks no event of any workflow on the server holds a
// secret, and that at least runs pipeline runs are among them.
func grepHistories(t *testing.T, tc client.Client, secrets map[string]string, runs int) {
	t.Helper()
	ctx := context.Background()
	var token []byte
	pipelines := 0
	for {
		resp, err := tc.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{NextPageToken: token})
		require.NoError(t, err)
		for _, e := range resp.Executions {
			if e.Type.GetName() == "Pipeline" {
				pipelines++
			}
			it := tc.GetWorkflowHistory(ctx, e.Execution.WorkflowId, e.Execution.RunId, false, enums.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
			for it.HasNext() {
				ev, err := it.Next()
				require.NoError(t, err)
				for what, secret := range secrets {
					assert.False(t, strings.Contains(ev.String(), secret), "the %s is in event %d of %s", what, ev.GetEventId(), e.Execution.WorkflowId)
				}
			}
		}
		if token = resp.NextPageToken; len(token) == 0 {
			break
		}
	}
	assert.GreaterOrEqual(t, pipelines, runs, "the server holds every run")
}
