package schedule

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestDiagnostics pins the messages of schedule files porch refuses or
// warns about: each at its file, line and column, with what to do.
func TestDiagnostics(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "job.yml"), []byte("type: pipeline\n"), 0o644))
	const head = "name: s\n"
	const job = "create_job: ./job.yml\n"
	for name, c := range map[string]struct{ file, want string }{
		"bad minute": {head + "trigger:\n  type: cron\n  expression: \"61 * * * *\"\n" + job,
			"s.yml:4:16: error: trigger.expression: minute field \"61\": 61 is out of range 0-59"},
		"bad day of week": {head + "trigger:\n  type: cron\n  expression: 0 9 * * MON-FRY\n" + job,
			"s.yml:4:27: error: trigger.expression: day of week field \"MON-FRY\": \"FRY\" is not a number or a name such as SUN"},
		"four fields": {head + "trigger:\n  type: cron\n  expression: \"0 9 * *\"\n" + job,
			"s.yml:4:15: error: trigger.expression: a cron expression has 5 fields, \"0 9 * *\" has 4"},
		"bad step": {head + "trigger:\n  type: cron\n  expression: \"*/0 * * * *\"\n" + job,
			"s.yml:4:18: error: trigger.expression: minute field \"*/0\": the step \"0\" is not a whole number from 1 to 59"},
		"unknown zone": {head + "trigger:\n  type: cron\n  expression: \"0 * * * *\"\n  time_zone: Pacific Standard Tme\n" + job,
			"s.yml:5:14: error: trigger.time_zone: unknown time zone \"Pacific Standard Tme\"\n\tdid you mean \"Pacific Standard Time\"?"},
		"misspelt zone key": {head + "trigger:\n  type: cron\n  expression: \"0 * * * *\"\n  timezone: UTC\n" + job,
			"s.yml:5:3: error: unknown key \"timezone\" in trigger\n\tdid you mean \"time_zone\"?"},
		"missing job file": {head + "trigger:\n  type: cron\n  expression: \"0 * * * *\"\ncreate_job: ./nope.yml\n",
			"s.yml:5:13: error: create_job: no job file \"./nope.yml\""},
		"missing inline job file": {head + "trigger:\n  type: cron\n  expression: \"0 * * * *\"\ncreate_job:\n  type: pipeline\n  job: nope.yml\n",
			"s.yml:7:8: error: create_job.job: no job file \"nope.yml\""},
		"registered job": {head + "trigger:\n  type: cron\n  expression: \"0 * * * *\"\ncreate_job: azureml:simple-pipeline-job\n",
			"s.yml:5:13: error: create_job: \"azureml:simple-pipeline-job\" names a registered Azure ML job"},
		"unknown ref": {head + "trigger:\n  type: cron\n  expression: \"0 * * * *\"\ncreate_job:\n  type: pipeline\n  job: job.yml\n  inputs:\n    x: run ${{parent.inputs.y}}\n",
			"s.yml:9:12: error: create_job.inputs.x: unknown reference \"${{parent.inputs.y}}\""},
		"hourly with a schedule": {head + "trigger:\n  type: recurrence\n  frequency: hour\n  interval: 1\n  schedule:\n    hours: [1]\n    minutes: [0]\n" + job,
			"s.yml:6:3: error: trigger.schedule: a recurrence every hour takes no schedule"},
		"every 5 months": {head + "trigger:\n  type: recurrence\n  frequency: month\n  interval: 5\n" + job,
			"s.yml:5:13: error: trigger.interval: every 5 months is not supported"},
		"bad week day": {head + "trigger:\n  type: recurrence\n  frequency: week\n  interval: 1\n  schedule:\n    hours: 9\n    minutes: 0\n    week_days: [monday, fridy]\n" + job,
			"s.yml:9:25: error: trigger.schedule.week_days: \"fridy\" is not a day of the week\n\tdid you mean \"friday\"?"},
		"hour 24": {head + "trigger:\n  type: recurrence\n  frequency: day\n  interval: 1\n  schedule:\n    hours: [23, 24]\n    minutes: 0\n" + job,
			"s.yml:7:17: error: trigger.schedule.hours: 24 is out of range"},
		"ends before it starts": {head + "trigger:\n  type: cron\n  expression: \"0 * * * *\"\n  start_time: \"2030-01-02T00:00:00\"\n  end_time: \"2030-01-01T00:00:00\"\n" + job,
			"s.yml:6:13: error: trigger.end_time: the schedule ends before it starts"},
		"no trigger": {head + job, "s.yml:1:1: error: trigger: the schedule has no trigger"},
		"every 2 days in Pacific time": {head + "trigger:\n  type: recurrence\n  frequency: day\n  interval: 2\n  time_zone: Pacific Standard Time\n" + job,
			"s.yml:5:13: warning: trigger.interval: every 2 days in Pacific Standard Time keeps the UTC offset of its first run"},
	} {
		t.Run(name, func(t *testing.T) {
			file := filepath.Join(dir, "s.yml")
			s, diags := Parse(file, []byte(c.file), Options{Now: now})
			got := strings.ReplaceAll(diags.Error(), dir+string(filepath.Separator), "")
			require.NotEmpty(t, diags)
			first := strings.SplitN(c.want, "\n", 2)
			assert.Contains(t, got, first[0])
			if len(first) == 2 {
				assert.Contains(t, got, first[1])
			}
			if strings.Contains(c.want, ": error: ") {
				assert.Nil(t, s, "a schedule with errors is not usable")
			} else {
				assert.NotNil(t, s)
			}
		})
	}
}
