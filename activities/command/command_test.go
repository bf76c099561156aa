package command

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/porch-pipelines/porch/activities/stepio"
	"github.com/porch-pipelines/porch/compiler/plan"
)

// Template parts, built by hand so these tests do not depend on the compiler.
func txt(s string) plan.Part { return plan.Part{Text: s} }
func inRef(n string) plan.Part {
	return plan.Part{Ref: &plan.Ref{Kind: plan.RefInput, Name: n}}
}
func outRef(n string) plan.Part {
	return plan.Part{Ref: &plan.Ref{Kind: plan.RefOutput, Name: n}}
}
func opt(parts ...plan.Part) plan.Part { return plan.Part{Optional: parts} }
func tmpl(parts ...plan.Part) plan.Template {
	var src strings.Builder
	for _, p := range parts {
		src.WriteString(p.Text)
	}
	return plan.Template{Source: src.String(), Parts: parts}
}

func literal(name, v string) plan.Input {
	return plan.Input{Name: name, Type: "string", Value: plan.Value{Kind: plan.ValueLiteral, Literal: v}}
}

func dataInput(name, path string) plan.Input {
	return plan.Input{Name: name, Type: "uri_folder", Value: plan.Value{Kind: plan.ValueData, Data: &plan.Data{Type: "uri_folder", Path: path}}}
}

// newEnv returns an activity test environment running a's activities with a
// fresh porch home.
func newEnv(t *testing.T) (*testsuite.TestActivityEnvironment, *Activities) {
	t.Helper()
	var s testsuite.WorkflowTestSuite
	env := s.NewTestActivityEnvironment()
	a := &Activities{Host: &stepio.Host{Home: t.TempDir(), KillGrace: 2 * time.Second}}
	a.Register(env)
	return env, a
}

func runStep(env *testsuite.TestActivityEnvironment, in RunCommandInput) (RunCommandResult, error) {
	var res RunCommandResult
	v, err := env.ExecuteActivity(RunCommandName, in)
	if err != nil {
		return res, err
	}
	return res, v.Get(&res)
}

// appError unwraps the application error an activity failed with.
func appError(t *testing.T, err error) *temporal.ApplicationError {
	t.Helper()
	var appErr *temporal.ApplicationError
	require.ErrorAs(t, err, &appErr)
	return appErr
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return string(b)
}

func stepInput(cmd plan.Template) RunCommandInput {
	return RunCommandInput{Step: stepio.Step{RunID: "run1", StepPath: "train", DefaultDatastore: "workspaceblobstore", Command: plan.Command{Template: cmd}}}
}

func artifactsDir(a *Activities, in RunCommandInput) string {
	return filepath.Join(a.Home, "datastores", in.DefaultDatastore, "azureml", in.RunID, in.StepPath, "artifacts")
}

func TestRunCommandWritesOutputsAndRendersLiterals(t *testing.T) {
	env, a := newEnv(t)
	data := filepath.Join(a.Home, "datastores", "workspaceblobstore", "raw")
	require.NoError(t, os.MkdirAll(data, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(data, "x.txt"), []byte("payload\n"), 0o644))

	in := stepInput(tmpl(
		txt("echo lr="), inRef("lr"), txt(" flag="), inRef("flag"), txt(" > "), outRef("model"), txt("/args.txt && cp "),
		inRef("data"), txt("/x.txt "), outRef("metrics"),
		txt(` && echo hello > outputs/o.txt && echo "$AZUREML_RUN_ID $PORCH_STEP $AZURE_ML_INPUT_lr $MYVAR" > `), outRef("model"),
		txt(`/env.txt && test "$AZURE_ML_OUTPUT_model" = "`), outRef("model"), txt(`" && echo to-stdout`),
	))
	in.Command.EnvironmentVariables = map[string]string{"MYVAR": "mine"}
	in.Inputs = []plan.Input{literal("lr", "1e-3"), literal("flag", "False"), dataInput("data", "azureml://datastores/workspaceblobstore/paths/raw/")}
	in.Outputs = []plan.Output{
		{Name: "model", Type: "uri_folder", Path: plan.DefaultOutputURI("workspaceblobstore", "run1", "train", "model")},
		{Name: "metrics", Type: "uri_file", Path: "azureml://datastores/workspaceblobstore/paths/metrics/run1/m.txt"},
	}

	res, err := runStep(env, in)
	require.NoError(t, err)

	model := filepath.Join(a.Home, "datastores/workspaceblobstore/azureml/run1/train/model")
	metrics := filepath.Join(a.Home, "datastores/workspaceblobstore/metrics/run1/m.txt")
	art := artifactsDir(a, in)
	assert.Equal(t, "lr=1e-3 flag=False\n", readFile(t, filepath.Join(model, "args.txt")))
	assert.Equal(t, "run1 train 1e-3 mine\n", readFile(t, filepath.Join(model, "env.txt")))
	assert.Equal(t, "payload\n", readFile(t, metrics))
	assert.Equal(t, "hello\n", readFile(t, filepath.Join(art, "outputs", "o.txt")))

	assert.Equal(t, filepath.Join(a.Home, "work", "run1", "train"), res.WorkDir)
	assert.Equal(t, art, res.LogDir)
	assert.Equal(t, int32(1), res.Attempt)
	assert.Equal(t, []stepio.OutputLocation{
		{Name: "model", URI: in.Outputs[0].Path, Path: model},
		{Name: "metrics", URI: in.Outputs[1].Path, Path: metrics},
		{Name: "artifacts", URI: stepio.StepArtifactsURI("workspaceblobstore", "run1", "train"), Path: art},
	}, res.Outputs)

	log := readFile(t, filepath.Join(art, "user_logs", "std_log.txt"))
	// Staged per run, step execution (the workflow run) and attempt.
	staged := filepath.Join(filepath.Dir(model), ".porch-staging.model.run1.default-test-run-id.1")
	assert.Contains(t, log, "porch: command: echo lr=1e-3 flag=False > "+staged+"/args.txt", "the attempt writes its outputs in staging")
	assert.Contains(t, log, `porch: output "model" is written at `+staged+" and moves to "+model+" when the attempt succeeds")
	assert.NoDirExists(t, staged, "published outputs leave no staging behind")
	assert.Contains(t, log, "to-stdout\n")
	assert.NotContains(t, log, "environments", "no environment, no note")
}

func TestRunCommandOptionalGroups(t *testing.T) {
	env, a := newEnv(t)
	in := stepInput(tmpl(
		txt("echo a"), opt(txt(" --x "), inRef("x")), opt(txt(" --y "), inRef("y")), txt(" > outputs/out.txt"),
	))
	in.Inputs = []plan.Input{
		{Name: "x", Type: "string", Optional: true, Value: plan.Value{Kind: plan.ValueNone}},
		literal("y", "2"),
	}
	_, err := runStep(env, in)
	require.NoError(t, err)
	assert.Equal(t, "a --y 2\n", readFile(t, filepath.Join(artifactsDir(a, in), "outputs", "out.txt")))
}

func TestRunCommandMissingDataInput(t *testing.T) {
	env, _ := newEnv(t)
	in := stepInput(tmpl(txt("cat "), inRef("data")))
	in.Inputs = []plan.Input{dataInput("data", "azureml://datastores/workspaceblobstore/paths/nope/")}
	_, err := runStep(env, in)
	appErr := appError(t, err)
	assert.True(t, appErr.NonRetryable())
	assert.Equal(t, stepio.InvalidStepType, appErr.Type())
	assert.Contains(t, appErr.Message(), `input "data"`)
	assert.Contains(t, appErr.Message(), "azureml://datastores/workspaceblobstore/paths/nope/ does not exist")
	assert.Contains(t, appErr.Message(), "fix the input's path")
}

func TestRunCommandRejectsBadInputs(t *testing.T) {
	cases := map[string]plan.Input{
		"unresolved reference": {Name: "d", Value: plan.Value{Kind: plan.ValueStepOutput, Step: "prep", Output: "out"}},
		"unreadable scheme":    dataInput("d", "gs://bucket/data.csv"),
		"relative data":        dataInput("d", "data/train"),
		"data without path":    {Name: "d", Value: plan.Value{Kind: plan.ValueData}},
	}
	for name, inp := range cases {
		t.Run(name, func(t *testing.T) {
			env, _ := newEnv(t)
			in := stepInput(tmpl(txt("true")))
			in.Inputs = []plan.Input{inp}
			_, err := runStep(env, in)
			appErr := appError(t, err)
			assert.True(t, appErr.NonRetryable())
			assert.Equal(t, stepio.InvalidStepType, appErr.Type())
			assert.Contains(t, appErr.Message(), `input "d"`)
		})
	}
}

func TestRunCommandNonZeroExit(t *testing.T) {
	env, a := newEnv(t)
	in := stepInput(tmpl(txt(`for i in $(seq 1 30); do echo "err $i" >&2; done; echo out-line; exit 3`)))
	_, err := runStep(env, in)
	appErr := appError(t, err)
	assert.True(t, appErr.NonRetryable())
	assert.Equal(t, CommandFailedType, appErr.Type())

	var want []string
	for i := 11; i <= 30; i++ {
		want = append(want, "err "+strconv.Itoa(i))
	}
	assert.Equal(t, "command exited with code 3\n"+strings.Join(want, "\n"), appErr.Message())
	var failure CommandFailure
	require.NoError(t, appErr.Details(&failure))
	logFile := filepath.Join(artifactsDir(a, in), "user_logs", "std_log.txt")
	assert.Equal(t, CommandFailure{ExitCode: 3, StderrTail: want, LogFile: logFile, Attempt: 1}, failure)

	log := readFile(t, logFile)
	// stdout and stderr are copied to the log as they come, so out-line may
	// land anywhere among the err lines.
	assert.Contains(t, strings.ReplaceAll(log, "out-line\n", ""), "\nerr 1\nerr 2\n", "all of stderr is logged")
	assert.Contains(t, log, "\nout-line\n")
	assert.True(t, strings.HasSuffix(log, "porch: command exited with code 3\n"), "log ends with the outcome:\n%s", log)
}

func TestRunCommandKilledBySignal(t *testing.T) {
	env, _ := newEnv(t)
	_, err := runStep(env, stepInput(tmpl(txt(`echo dying >&2; kill -KILL $$`))))
	appErr := appError(t, err)
	assert.Equal(t, CommandFailedType, appErr.Type())
	assert.Equal(t, "command was killed by signal SIGKILL (killed)\ndying", appErr.Message())
	var failure CommandFailure
	require.NoError(t, appErr.Details(&failure))
	assert.Equal(t, 137, failure.ExitCode)
}

func TestRunCommandCopiesCode(t *testing.T) {
	env, a := newEnv(t)
	code := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(code, "sub"), 0o755))
	require.NoError(t, os.MkdirAll(filepath.Join(code, "outputs"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(code, "main.sh"), []byte("cat sub/helper.txt > outputs/copied.txt\n"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(code, "sub", "helper.txt"), []byte("helped\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(code, "outputs", "seed.txt"), []byte("seed\n"), 0o644))
	require.NoError(t, os.Symlink("sub/helper.txt", filepath.Join(code, "link.txt")))

	in := stepInput(tmpl(txt("sh main.sh && cat link.txt")))
	in.Command.Code = code
	stale := filepath.Join(a.Home, "work", "run1", "train", "stale.txt")
	require.NoError(t, os.MkdirAll(filepath.Dir(stale), 0o755))
	require.NoError(t, os.WriteFile(stale, nil, 0o644))

	res, err := runStep(env, in)
	require.NoError(t, err)
	outputs := filepath.Join(artifactsDir(a, in), "outputs")
	assert.Equal(t, "helped\n", readFile(t, filepath.Join(outputs, "copied.txt")))
	assert.Equal(t, "seed\n", readFile(t, filepath.Join(outputs, "seed.txt")), "the code's outputs/ lands in the artifacts")
	assert.NoFileExists(t, stale, "an earlier attempt's working folder is removed")
	info, err := os.Stat(filepath.Join(res.WorkDir, "main.sh"))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o755), info.Mode().Perm())
	assert.Contains(t, readFile(t, filepath.Join(res.LogDir, "user_logs", "std_log.txt")), "\nhelped\n")
}

func TestRunCommandCopiesSingleFileCode(t *testing.T) {
	env, a := newEnv(t)
	script := filepath.Join(t.TempDir(), "run.sh")
	require.NoError(t, os.WriteFile(script, []byte("echo single > outputs/s.txt\n"), 0o644))
	in := stepInput(tmpl(txt("sh run.sh")))
	in.Command.Code = script
	_, err := runStep(env, in)
	require.NoError(t, err)
	assert.Equal(t, "single\n", readFile(t, filepath.Join(artifactsDir(a, in), "outputs", "s.txt")))
}

func TestRunCommandMissingCode(t *testing.T) {
	env, _ := newEnv(t)
	in := stepInput(tmpl(txt("true")))
	in.Command.Code = filepath.Join(t.TempDir(), "gone")
	_, err := runStep(env, in)
	appErr := appError(t, err)
	assert.True(t, appErr.NonRetryable())
	assert.Contains(t, appErr.Message(), "does not exist on this worker")
}

func TestRunCommandEnvironmentNoteOnce(t *testing.T) {
	env, a := newEnv(t)
	in := stepInput(tmpl(txt("echo ran")))
	in.Command.Environment = "azureml:AzureML-sklearn-1.5:1"
	_, err := runStep(env, in)
	require.NoError(t, err)
	log := readFile(t, filepath.Join(artifactsDir(a, in), "user_logs", "std_log.txt"))
	assert.Equal(t, 1, strings.Count(log, "compiled before porch ran environments"), log)
	assert.Contains(t, log, `"azureml:AzureML-sklearn-1.5:1" is not set up`)
	first := strings.SplitN(log, "\n", 3)
	assert.Contains(t, first[0], `step "train" of run "run1"`)
}

func TestRunCommandHeartbeats(t *testing.T) {
	env, a := newEnv(t)
	a.HeartbeatInterval = 10 * time.Millisecond
	release := filepath.Join(t.TempDir(), "release")
	beats := make(chan int64, 1)
	env.SetOnActivityHeartbeatListener(func(_ *activity.Info, details converter.EncodedValues) {
		var b stepio.Beat
		if details.Get(&b) == nil && b.Phase == "running" && b.LoggedBytes > 0 {
			select {
			case beats <- b.LoggedBytes:
				// The first heartbeat lets the command finish.
				_ = os.WriteFile(release, nil, 0o644)
			default:
			}
		}
	})
	// The command waits for the test's heartbeat listener, not for a clock.
	in := stepInput(tmpl(txt("echo started; while [ ! -e " + release + " ]; do sleep 0.01; done")))
	_, err := runStep(env, in)
	require.NoError(t, err)
	select {
	case n := <-beats:
		assert.Positive(t, n)
	default:
		t.Fatal("the command finished without a heartbeat releasing it")
	}
}

func TestRunCommandRejectsBadNames(t *testing.T) {
	for _, step := range []string{"", "../escape", "/abs", "a//b"} {
		env, _ := newEnv(t)
		in := stepInput(tmpl(txt("true")))
		in.StepPath = step
		_, err := runStep(env, in)
		appErr := appError(t, err)
		assert.Equal(t, stepio.InvalidStepType, appErr.Type(), "step path %q", step)
	}
}

func TestRunCommandWithoutHome(t *testing.T) {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestActivityEnvironment()
	(&Activities{Host: &stepio.Host{}}).Register(env)
	_, err := runStep(env, stepInput(tmpl(txt("true"))))
	appErr := appError(t, err)
	assert.True(t, appErr.NonRetryable())
	assert.Contains(t, appErr.Message(), "no porch home folder")
}

func TestRunCommandCodeHoldingHome(t *testing.T) {
	code := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(code, "main.sh"), []byte("echo ok > outputs/ok.txt\n"), 0o644))
	var s testsuite.WorkflowTestSuite
	env := s.NewTestActivityEnvironment()
	// The porch home inside the code folder, as with `code: .` and a
	// project-local PORCH_HOME.
	a := &Activities{Host: &stepio.Host{Home: filepath.Join(code, ".porch")}}
	a.Register(env)
	in := stepInput(tmpl(txt("sh main.sh && test ! -e .porch")))
	in.Command.Code = code
	_, err := runStep(env, in)
	require.NoError(t, err)
	assert.Equal(t, "ok\n", readFile(t, filepath.Join(artifactsDir(a, in), "outputs", "ok.txt")))
}
