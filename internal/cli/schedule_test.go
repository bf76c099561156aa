package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"

	"github.com/porch-pipelines/porch/worker"
)

// scheduleExamples are azureml-examples' schedule files and their pipeline.
var scheduleExamples = filepath.Join("..", "..", "schedule", "testdata", "azureml")

// porchCmd runs a porch command line and returns its stdout and stderr.
func porchCmd(t *testing.T, want int, args ...string) (string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := Run(context.Background(), args, nil, &stdout, &stderr)
	require.Equal(t, want, code, "porch %s\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), &stdout, &stderr)
	return stdout.String(), stderr.String()
}

// matching lists the first n instants from `from` on (whole minutes) whose
// wall clock in loc matches hours and minutes: the times a calendar of
// those hours and minutes fires at, found by walking every minute, not as
// Temporal computes them. A clock time skipped by a DST change never
// matches; one repeated matches twice.
func matching(from time.Time, loc *time.Location, hours, minutes []int, n int) []time.Time {
	in := func(v int, set []int) bool { return set == nil || contains(set, v) }
	var out []time.Time
	for t := from.Truncate(time.Minute).Add(time.Minute); len(out) < n; t = t.Add(time.Minute) {
		l := t.In(loc)
		if in(l.Hour(), hours) && in(l.Minute(), minutes) {
			out = append(out, t.UTC())
		}
	}
	return out
}

func contains(set []int, v int) bool {
	for _, s := range set {
		if s == v {
			return true
		}
	}
	return false
}

func describeNext(t *testing.T, c client.Client, id string) []time.Time {
	t.Helper()
	desc, err := c.ScheduleClient().GetHandle(context.Background(), id).Describe(context.Background())
	require.NoError(t, err)
	var out []time.Time
	for _, n := range desc.Info.NextActionTimes {
		out = append(out, n.UTC())
	}
	return out
}

// sameTimes compares the next ten action times with the expected ones,
// computed from before the schedule was made: one that fell due between
// then and the describe may have gone.
func sameTimes(t *testing.T, want, got []time.Time, msg string) {
	t.Helper()
	require.Len(t, got, 10, msg)
	if len(want) > 0 && want[0].Before(got[0]) {
		want = want[1:]
	}
	assert.Equal(t, want[:10], got, msg)
}

// TestScheduleAzureExamples creates azureml-examples' three schedule files
// as they are, and reads their next ten action times back from the
// server against times computed here, walking the wall clock.
func TestScheduleAzureExamples(t *testing.T) {
	c, _ := startInputServer(t)
	pacific, err := time.LoadLocation("America/Los_Angeles")
	require.NoError(t, err)
	before := time.Now()
	for _, f := range []string{"cron-job-schedule.yml", "cron-with-settings-job-schedule.yml", "recurrence-job-schedule.yml"} {
		out, _ := porchCmd(t, ExitOK, "schedule", "create", "-f", filepath.Join(scheduleExamples, f))
		assert.Contains(t, out, "(pipeline hello_pipeline_abc, 3 steps)")
	}
	hourly := matching(before, pacific, nil, []int{0}, 11)
	sameTimes(t, hourly, describeNext(t, c, "simple_cron_job_schedule"), "hourly in Pacific time")
	sameTimes(t, hourly, describeNext(t, c, "cron_with_settings_job_schedule"), "hourly in Pacific time")
	sameTimes(t, matching(before, pacific, []int{4, 5, 10, 11, 12}, []int{0, 30}, 11),
		describeNext(t, c, "simple_recurrence_job_schedule"), "hours × minutes in Pacific time")

	// Across the start of daylight saving time (14 March 2027, 02:00
	// Pacific): hourly runs skip the 2 o'clock that does not exist, and
	// a daily 09:00 run moves from 17:00 to 16:00 UTC.
	start := time.Date(2027, 3, 13, 22, 0, 0, 0, pacific)
	porchCmd(t, ExitOK, "schedule", "create", "-f", filepath.Join(scheduleExamples, "cron-job-schedule.yml"),
		"--set", "name=dst_hourly", "--set", "trigger.start_time=2027-03-13T22:00:00")
	got := describeNext(t, c, "dst_hourly")
	assert.Equal(t, matching(start.Add(-time.Minute), pacific, nil, []int{0}, 10), got)
	assert.Equal(t, []string{"2027-03-14T01:00:00-08:00", "2027-03-14T03:00:00-07:00"},
		[]string{got[3].In(pacific).Format(time.RFC3339), got[4].In(pacific).Format(time.RFC3339)}, "2 o'clock is skipped: %v", got)
	porchCmd(t, ExitOK, "schedule", "create", "-f", filepath.Join(scheduleExamples, "cron-job-schedule.yml"),
		"--set", "name=dst_daily", "--set", "trigger.start_time=2027-03-10T00:00:00", "--set", "trigger.expression=0 9 * * *")
	got = describeNext(t, c, "dst_daily")
	assert.Equal(t, matching(time.Date(2027, 3, 10, 0, 0, 0, 0, pacific), pacific, []int{9}, []int{0}, 10), got)
	assert.Equal(t, []string{"17:00", "17:00", "17:00", "17:00", "16:00", "16:00"}, utcClock(got[:6]), "09:00 Pacific in UTC")
}

func utcClock(ts []time.Time) []string {
	var out []string
	for _, t := range ts {
		out = append(out, t.UTC().Format("15:04"))
	}
	return out
}

// TestScheduleLifecycle triggers a schedule's run (which succeeds, is
// named <schedule>-<time>, fills ${{name}}, carries the schedule's tags
// and is listed with its schedule), then disables, enables and deletes it.
func TestScheduleLifecycle(t *testing.T) {
	c, home := startInputServer(t)
	// The example's steps name compute cpu-cluster, which this server has
	// not registered: a worker serves its queue, as porch dev's does.
	w, err := worker.Start(c, worker.Options{Home: home, Computes: []string{"cpu-cluster"}})
	require.NoError(t, err)
	t.Cleanup(w.Stop)
	ctx := context.Background()
	name := "cron_with_settings_job_schedule"
	porchCmd(t, ExitOK, "schedule", "create", "-f", filepath.Join(scheduleExamples, "cron-with-settings-job-schedule.yml"))
	_, stderr := porchCmd(t, ExitFailure, "schedule", "create", "-f", filepath.Join(scheduleExamples, "cron-with-settings-job-schedule.yml"))
	assert.Contains(t, stderr, `schedule "cron_with_settings_job_schedule" already exists`)

	out, _ := porchCmd(t, ExitOK, "schedule", "trigger", name, "--watch")
	run := regexp.MustCompile(`(?m)^run (` + name + `-\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ) succeeded in `).FindStringSubmatch(out)
	require.NotNil(t, run, out)
	var log []byte
	log, err = os.ReadFile(filepath.Join(home, "datastores", "workspaceblobstore", "azureml", run[1], "a", "artifacts", "user_logs", "std_log.txt"))
	require.NoError(t, err)
	assert.Contains(t, string(log), "\nhello "+run[1]+"\n", "${{name}} is the run's name")

	listed := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(run[1]) + ` +completed +.* hello_pipeline_abc +alice@example\.com +` + name + `$`)
	require.Eventually(t, func() bool { // visibility indexes the run's upserted PorchRun
		out, _ := porchCmd(t, ExitOK, "job", "list", "--schedule", name)
		return listed.MatchString(out)
	}, 30*time.Second, 100*time.Millisecond)
	out, _ = porchCmd(t, ExitOK, "job", "show", run[1])
	assert.Contains(t, out, "\nscheduled by "+name+" (cron 0 * * * * in Pacific Standard Time (America/Los_Angeles)), due ")
	assert.Contains(t, out, "\ntags: schedule=cron_with_settings_schedule\n")

	out, _ = porchCmd(t, ExitOK, "schedule", "show", name)
	assert.Regexp(t, `(?m)^schedule `+name+`: enabled$`, out)
	assert.Regexp(t, `(?m)^  `+regexp.QuoteMeta(run[1])+` +completed `, out)
	porchCmd(t, ExitOK, "schedule", "disable", name)
	desc, err := c.ScheduleClient().GetHandle(ctx, name).Describe(ctx)
	require.NoError(t, err)
	assert.True(t, desc.Schedule.State.Paused)
	out, _ = porchCmd(t, ExitOK, "schedule", "show", name)
	assert.Regexp(t, `(?m)^schedule `+name+`: disabled$`, out)
	porchCmd(t, ExitOK, "schedule", "enable", name)
	desc, err = c.ScheduleClient().GetHandle(ctx, name).Describe(ctx)
	require.NoError(t, err)
	assert.False(t, desc.Schedule.State.Paused)
	assert.Equal(t, "pipeline hello_pipeline_abc: 3 steps · schedule "+name, desc.Schedule.Action.(*client.ScheduleWorkflowAction).StaticSummary)
	assert.Contains(t, desc.Schedule.Action.(*client.ScheduleWorkflowAction).StaticDetails, "**Next runs** (as of ")

	porchCmd(t, ExitOK, "schedule", "delete", name)
	_, stderr = porchCmd(t, ExitFailure, "schedule", "show", name)
	assert.Contains(t, stderr, `no schedule "`+name+`" on `)
}

// TestScheduleErrors: a schedule porch cannot create is refused before
// any server is asked, each problem at its file, line and column; a
// problem with what create_job overrides in the job is reported where the
// schedule file says it.
func TestScheduleErrors(t *testing.T) {
	dir := t.TempDir()
	t.Setenv(envHome, filepath.Join(dir, "home"))
	t.Setenv(envAddress, "")
	pipeline, err := filepath.Abs(filepath.Join(scheduleExamples, "simple-pipeline-job.yml"))
	require.NoError(t, err)
	for name, c := range map[string]struct{ yaml, want string }{
		"invalid cron": {"trigger:\n  type: cron\n  expression: \"0 25 * * *\"\ncreate_job: " + pipeline + "\n",
			"s.yml:4:18: error: trigger.expression: hour field \"25\": 25 is out of range 0-23\n"},
		"unknown time zone": {"trigger:\n  type: cron\n  expression: \"0 * * * *\"\n  time_zone: Atlantis Standard Time\ncreate_job: " + pipeline + "\n",
			"s.yml:5:14: error: trigger.time_zone: unknown time zone \"Atlantis Standard Time\"\n"},
		"missing job file": {"trigger:\n  type: cron\n  expression: \"0 * * * *\"\ncreate_job: ./pipeline.yml\n",
			"s.yml:5:13: error: create_job: no job file \"./pipeline.yml\"\n"},
		"unknown job input": {"trigger:\n  type: cron\n  expression: \"0 * * * *\"\ncreate_job:\n  type: pipeline\n  job: " + pipeline +
			"\n  inputs:\n    hello_string_top_level: hi\n", "s.yml:9:29: error: the pipeline has no input \"hello_string_top_level\"\n"},
	} {
		t.Run(name, func(t *testing.T) {
			file := filepath.Join(dir, "s.yml")
			require.NoError(t, os.WriteFile(file, []byte("name: nightly\n"+c.yaml), 0o644))
			_, stderr := porchCmd(t, ExitFailure, "schedule", "create", "-f", file)
			assert.Contains(t, strings.ReplaceAll(stderr, dir+string(filepath.Separator), ""), c.want)
		})
	}
}

// TestScheduleUpdateAndResume updates a schedule (trigger, overlap), then
// resumes a scheduled run that failed: the new execution's inputs are
// filled as the first one's were.
func TestScheduleUpdateAndResume(t *testing.T) {
	c, home := startInputServer(t)
	ctx := context.Background()
	dir := t.TempDir()
	flag := filepath.Join(dir, "flag")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "p.yml"), []byte(`type: pipeline
name: flaky
inputs:
  who: nobody
jobs:
  check:
    command: test -f `+flag+` && echo "this is ${{inputs.who}}"
    inputs:
      who: ${{parent.inputs.who}}
`), 0o644))
	sched := filepath.Join(dir, "s.yml")
	require.NoError(t, os.WriteFile(sched, []byte(`name: flaky_nightly
trigger: {type: cron, expression: "0 2 * * *", start_time: "2030-01-01T00:00:00"}
create_job:
  type: pipeline
  job: p.yml
  inputs: {who: "${{name}} due ${{creation_context.trigger_time}}"}
`), 0o644))
	porchCmd(t, ExitOK, "schedule", "create", "-f", sched)
	out, _ := porchCmd(t, ExitOK, "schedule", "update", "-f", sched, "--set", "trigger.expression=30 3 * * MON", "--overlap", "buffer_one")
	assert.Contains(t, out, "schedule flaky_nightly updated on ")
	desc, err := c.ScheduleClient().GetHandle(ctx, "flaky_nightly").Describe(ctx)
	require.NoError(t, err)
	assert.Equal(t, "buffer_one", overlapName(desc.Schedule.Policy.Overlap))
	next := desc.Info.NextActionTimes[0].UTC()
	assert.Equal(t, "2030-01-07T03:30:00Z", next.Format(time.RFC3339), "the first Monday of 2030 at 03:30 UTC")

	_, stderr := porchCmd(t, ExitFailure, "schedule", "trigger", "flaky_nightly", "--watch")
	run := regexp.MustCompile(`run (flaky_nightly-\S+Z) failed`).FindStringSubmatch(stderr)
	require.NotNil(t, run, stderr)
	require.NoError(t, os.WriteFile(flag, nil, 0o644))
	out, _ = porchCmd(t, ExitOK, "job", "resume", run[1])
	assert.Contains(t, out, "run "+run[1]+" resumed")
	log, err := os.ReadFile(filepath.Join(home, "datastores", "workspaceblobstore", "azureml", run[1], "check", "artifacts", "user_logs", "std_log.txt"))
	require.NoError(t, err)
	due := strings.TrimPrefix(run[1], "flaky_nightly-")
	assert.Contains(t, string(log), "\nthis is "+run[1]+" due "+due+"\n")
}

// TestScheduleNeedsAServer: with no server configured and no porch dev,
// there is nowhere to keep a schedule.
func TestScheduleNeedsAServer(t *testing.T) {
	t.Setenv(envHome, filepath.Join(t.TempDir(), "home"))
	t.Setenv(envAddress, "")
	_, stderr := porchCmd(t, ExitFailure, "schedule", "create", "-f", filepath.Join(scheduleExamples, "cron-job-schedule.yml"))
	assert.Contains(t, stderr, "porch: schedules live on a server that outlives porch, and none is configured and no `porch dev` is running")
	_, stderr = porchCmd(t, ExitFailure, "schedule", "list")
	assert.Contains(t, stderr, "start one with `porch dev`")
}
