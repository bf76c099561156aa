package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/porch-pipelines/porch/activities/objectstore/s3test"
	"github.com/porch-pipelines/porch/internal/cli"
	"github.com/porch-pipelines/porch/internal/tlstest"
	"github.com/rogpeppe/go-internal/testscript"
)

func TestMain(m *testing.M) {
	// testscript.Main exits itself: the S3 server, if a script started one,
	// dies with this process by its parent-death signal.
	testscript.Main(m, map[string]func(){
		"porch": func() {
			os.Exit(cli.Run(context.Background(), os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
		},
	})
}

// TestScripts runs testdata/script/*.txtar: what a user types and sees.
// Each script gets its own PORCH_HOME and no configured server; SAMPLES
// names samples/, HISTORIES the recorded replay fixtures and EXAMPLES the
// shared copy of azureml-examples.
func TestScripts(t *testing.T) {
	testscript.Run(t, scriptParams(t, filepath.Join("testdata", "script")))
}

// scriptParams are the scripts' parameters, for the scripts in dir.
func scriptParams(t *testing.T, dir string) testscript.Params {
	samples, err := filepath.Abs(filepath.Join("..", "..", "samples"))
	if err != nil {
		t.Fatal(err)
	}
	histories, err := filepath.Abs(filepath.Join("..", "..", "workflows", "testdata", "histories"))
	if err != nil {
		t.Fatal(err)
	}
	examples, err := examplesDir()
	if err != nil {
		t.Fatal(err)
	}
	return testscript.Params{
		Dir: dir,
		Setup: func(env *testscript.Env) error {
			env.Setenv("PORCH_HOME", filepath.Join(env.WorkDir, "home"))
			env.Setenv("SAMPLES", samples)
			env.Setenv("HISTORIES", histories)
			env.Setenv("EXAMPLES", examples)
			// Steps run on the host unless a script asks for a container
			// runtime (runtime.txtar, environment.txtar): the samples'
			// environments are images this machine may not reach.
			env.Setenv("PORCH_RUNTIME", "host")
			return nil
		},
		Condition: scriptCondition,
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"waitfile":   cmdWaitFile,
			"stdout2env": cmdStdoutToEnv,
			"devaddr":    cmdDevAddr,
			"pidgone":    cmdPidGone,
			"waitout":    cmdWaitOut,
			"s3bucket":   cmdS3Bucket,
			"s3cat":      cmdS3Cat,
			"tlscerts":   cmdTLSCerts,
		},
	}
}

// scriptCondition adds [pandas:PYTHON] to the scripts' conditions: PYTHON,
// a path or a name on PATH, is a Python interpreter that imports pandas.
// [s3] holds when the S3 server the tests use (s3test) is installed,
// [examples] when the shared copy of azureml-examples is beside the project.
func scriptCondition(cond string) (bool, error) {
	switch cond {
	case "s3":
		return s3test.Binary() != "", nil
	case "examples":
		dir, err := examplesDir()
		if err != nil {
			return false, err
		}
		info, err := os.Stat(dir)
		return err == nil && info.IsDir(), nil
	}
	prog, ok := strings.CutPrefix(cond, "pandas:")
	if !ok || prog == "" {
		return false, fmt.Errorf("unknown condition %q: porch's scripts add only [s3], [examples] and [pandas:PYTHON], e.g. [pandas:/usr/bin/python3]", cond)
	}
	v, _ := pandasCache.LoadOrStore(prog, sync.OnceValue(func() bool {
		return exec.Command(prog, "-c", "import pandas").Run() == nil
	}))
	return v.(func() bool)(), nil
}

// examplesDir is the shared copy of azureml-examples, beside the project
// (../shared/azureml-examples).
func examplesDir() (string, error) {
	return filepath.Abs(filepath.Join("..", "..", "..", "shared", "azureml-examples"))
}

// pandasCache maps an interpreter to whether it imports pandas, asked once:
// importing pandas takes a good part of a second.
var pandasCache sync.Map

// waitLimit bounds the waits of the script commands below; they return as
// soon as their condition holds.
const waitLimit = 60 * time.Second

// waitFor polls cond until it holds or waitLimit passes.
func waitFor(cond func() bool) bool {
	deadline := time.Now().Add(waitLimit)
	for time.Now().Before(deadline) {
		if cond() {
			return true
		}
		time.Sleep(20 * time.Millisecond)
	}
	return false
}

// cmdWaitFile waits until a file exists and is not empty: waitfile FILE.
func cmdWaitFile(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: waitfile FILE")
	}
	path := ts.MkAbs(args[0])
	if !waitFor(func() bool { fi, err := os.Stat(path); return err == nil && fi.Size() > 0 }) {
		ts.Fatalf("%s did not appear within %s", path, waitLimit)
	}
}

// cmdWaitOut runs a command again until its stdout matches a regular
// expression: waitout REGEXP PROGRAM ARGS... (a state a run reaches in its
// own time, such as a step waiting for quota).
func cmdWaitOut(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 {
		ts.Fatalf("usage: waitout REGEXP PROGRAM ARGS...")
	}
	re, err := regexp.Compile("(?m)" + args[0])
	ts.Check(err)
	if !waitFor(func() bool {
		_ = ts.Exec(args[1], args[2:]...)
		if re.MatchString(ts.ReadFile("stdout")) {
			return true
		}
		time.Sleep(200 * time.Millisecond)
		return false
	}) {
		ts.Fatalf("%s printed nothing matching %q within %s; last stdout:\n%s", strings.Join(args[1:], " "), args[0], waitLimit, ts.ReadFile("stdout"))
	}
}

// cmdStdoutToEnv sets an environment variable to the last command's
// stdout, trimmed: stdout2env NAME.
func cmdStdoutToEnv(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: stdout2env NAME")
	}
	ts.Setenv(args[0], strings.TrimSpace(ts.ReadFile("stdout")))
}

// cmdDevAddr waits for a running `porch dev` to record itself and sets
// DEV_ADDRESS to its address, and DEV_TLS_ADDRESS to its TLS frontend's
// when it serves TLS.
func cmdDevAddr(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 0 {
		ts.Fatalf("usage: devaddr")
	}
	path := filepath.Join(ts.Getenv("PORCH_HOME"), "dev.json")
	var st struct {
		Address    string
		TLSAddress string `json:"tls_address"`
	}
	ok := waitFor(func() bool {
		data, err := os.ReadFile(path)
		return err == nil && json.Unmarshal(data, &st) == nil && st.Address != ""
	})
	if !ok {
		ts.Fatalf("porch dev did not write %s within %s", path, waitLimit)
	}
	ts.Setenv("DEV_ADDRESS", st.Address)
	ts.Setenv("DEV_TLS_ADDRESS", st.TLSAddress)
}

// cmdTLSCerts writes a CA, a server certificate and client certificates
// to a new folder: tlscerts DIR (see tlstest for the files).
func cmdTLSCerts(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: tlscerts DIR")
	}
	dir := ts.MkAbs(args[0])
	ts.Check(os.MkdirAll(dir, 0o755))
	ts.Check(tlstest.Write(dir))
}

// cmdS3Bucket creates a bucket on the tests' S3 server (started once per
// test process) and sets S3_ENDPOINT, S3_BUCKET, AWS_ACCESS_KEY_ID and
// AWS_SECRET_ACCESS_KEY for the commands that follow: s3bucket. A script
// skips first when there is no server: [!s3] skip.
func cmdS3Bucket(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 0 {
		ts.Fatalf("usage: s3bucket")
	}
	srv, bucket, err := s3test.NewBucket()
	ts.Check(err)
	ts.Setenv("S3_ENDPOINT", srv.Endpoint)
	ts.Setenv("S3_BUCKET", bucket)
	ts.Setenv("AWS_ACCESS_KEY_ID", srv.AccessKey)
	ts.Setenv("AWS_SECRET_ACCESS_KEY", srv.SecretKey)
}

// cmdS3Cat prints an object of the bucket s3bucket made to stdout, for cmp
// and stdout to check: s3cat KEY.
func cmdS3Cat(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: s3cat KEY")
	}
	endpoint, ok := strings.CutPrefix(ts.Getenv("S3_ENDPOINT"), "http://")
	if !ok {
		ts.Fatalf("s3cat: no S3_ENDPOINT: run s3bucket first")
	}
	c, err := minio.New(endpoint, &minio.Options{
		Creds: credentials.NewStaticV4(ts.Getenv("AWS_ACCESS_KEY_ID"), ts.Getenv("AWS_SECRET_ACCESS_KEY"), ""),
	})
	ts.Check(err)
	obj, err := c.GetObject(context.Background(), ts.Getenv("S3_BUCKET"), args[0], minio.GetObjectOptions{})
	ts.Check(err)
	defer obj.Close()
	data, err := io.ReadAll(obj)
	if err != nil {
		ts.Fatalf("s3cat %s: %v", args[0], err)
	}
	ts.Stdout().Write(data)
}

// cmdPidGone checks that the process whose id is in FILE has exited (a
// zombie counts as exited) within LIMIT (a Go duration; waitLimit when
// not given): pidgone FILE [LIMIT].
func cmdPidGone(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 1 || len(args) > 2 {
		ts.Fatalf("usage: pidgone FILE [LIMIT]")
	}
	pid, err := strconv.Atoi(strings.TrimSpace(ts.ReadFile(args[0])))
	ts.Check(err)
	// The killed process may take a moment to be reaped.
	limit := waitLimit
	if len(args) == 2 {
		limit, err = time.ParseDuration(args[1])
		ts.Check(err)
	}
	deadline := time.Now().Add(limit)
	for alive(pid) {
		if time.Now().After(deadline) {
			ts.Fatalf("process %d is still running %s later", pid, limit)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func alive(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// The state follows the command name in parentheses.
	rest := string(stat[strings.LastIndexByte(string(stat), ')')+1:])
	return !strings.HasPrefix(strings.TrimSpace(rest), "Z")
}
