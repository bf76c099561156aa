package schedule

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"
)

var now = time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)

func parseFile(t *testing.T, file string, set map[string]string) *Schedule {
	t.Helper()
	data, err := os.ReadFile(file)
	require.NoError(t, err)
	s, diags := Parse(file, data, Options{Now: now, Set: set})
	require.Empty(t, diags, "diagnostics:\n%v", diags)
	return s
}

// TestAzureExamples reads azureml-examples' three schedule files as they are.
func TestAzureExamples(t *testing.T) {
	dir, err := filepath.Abs(filepath.Join("testdata", "azureml"))
	require.NoError(t, err)
	pst, err := time.LoadLocation("America/Los_Angeles")
	require.NoError(t, err)
	start := time.Date(2022, 7, 10, 10, 0, 0, 0, pst)
	job := filepath.Join(dir, "simple-pipeline-job.yml")

	cron := parseFile(t, filepath.Join(dir, "cron-job-schedule.yml"), nil)
	assert.Equal(t, "simple_cron_job_schedule", cron.Name)
	assert.Equal(t, "Simple cron job schedule", cron.DisplayName)
	assert.Equal(t, "America/Los_Angeles", cron.Trigger.Zone.IANA)
	assert.True(t, start.Equal(cron.Trigger.Start), "start_time is in the trigger's zone: %v", cron.Trigger.Start)
	assert.Equal(t, "2022-07-10T17:00:00Z", cron.Trigger.Start.UTC().Format(time.RFC3339))
	assert.Equal(t, job, cron.Job.File)
	assert.Empty(t, cron.Job.Set)
	spec := cron.Trigger.Spec(now)
	assert.Equal(t, "America/Los_Angeles", spec.TimeZoneName)
	assert.True(t, start.Equal(spec.StartAt))
	require.Len(t, spec.Calendars, 1)
	assert.Equal(t, []client.ScheduleRange{{Start: 0, End: 0, Step: 1}}, spec.Calendars[0].Minute)
	assert.Equal(t, []client.ScheduleRange{{Start: 0, End: 23, Step: 1}}, spec.Calendars[0].Hour)
	assert.Equal(t, "cron 0 * * * * in Pacific Standard Time (America/Los_Angeles)", spec.Calendars[0].Comment)

	settings := parseFile(t, filepath.Join(dir, "cron-with-settings-job-schedule.yml"), nil)
	assert.Equal(t, job, settings.Job.File)
	assert.Equal(t, map[string]string{
		"settings.continue_on_step_failure":   "true",
		"inputs.hello_string_top_level_input": RefName,
		"tags.schedule":                       "cron_with_settings_schedule",
	}, settings.Job.Set)
	assert.Equal(t, 21, settings.Job.At["inputs.hello_string_top_level_input"].Line)

	rec := parseFile(t, filepath.Join(dir, "recurrence-job-schedule.yml"), nil)
	assert.Equal(t, []int{4, 5, 10, 11, 12}, rec.Trigger.Hours)
	assert.Equal(t, []int{0, 30}, rec.Trigger.Minutes)
	spec = rec.Trigger.Spec(now)
	require.Len(t, spec.Calendars, 1)
	c := spec.Calendars[0]
	assert.Equal(t, valuesRanges([]int{4, 5, 10, 11, 12}), c.Hour)
	assert.Equal(t, valuesRanges([]int{0, 30}), c.Minute)
	assert.Equal(t, []client.ScheduleRange{{Start: 0, End: 6, Step: 1}}, c.DayOfWeek)
	assert.Equal(t, "every day at 04:00, 04:30, 05:00, 05:30, 10:00, 10:30, 11:00, 11:30, 12:00, 12:30 in Pacific Standard Time (America/Los_Angeles)",
		rec.Trigger.Describe())
}

// TestCronCalendars checks the calendars of cron expressions: names,
// ranges, steps, lists, 7 for Sunday, and either day field matching when
// both are restricted, as in Vixie cron (Temporal's calendars need both).
func TestCronCalendars(t *testing.T) {
	all := func(lo, hi int) []client.ScheduleRange { return []client.ScheduleRange{{Start: lo, End: hi, Step: 1}} }
	one := func(v int) client.ScheduleRange { return client.ScheduleRange{Start: v, End: v, Step: 1} }
	for expr, want := range map[string][]client.ScheduleCalendarSpec{
		"30 9 * * MON-FRI": {{Minute: []client.ScheduleRange{one(30)}, Hour: []client.ScheduleRange{one(9)}, DayOfMonth: all(1, 31), Month: all(1, 12),
			DayOfWeek: all(1, 5)}},
		"*/15 0-6/2 1,15 jan,Jul ?": {{Minute: []client.ScheduleRange{{Start: 0, End: 59, Step: 15}}, Hour: []client.ScheduleRange{{Start: 0, End: 6, Step: 2}},
			DayOfMonth: []client.ScheduleRange{one(1), one(15)}, Month: []client.ScheduleRange{one(1), one(7)}, DayOfWeek: all(0, 6)}},
		"0 0 * * 5-7": {{Minute: []client.ScheduleRange{one(0)}, Hour: []client.ScheduleRange{one(0)}, DayOfMonth: all(1, 31), Month: all(1, 12),
			DayOfWeek: []client.ScheduleRange{one(0), {Start: 5, End: 6, Step: 1}}}},
		"0 12 1 * 1": {
			{Minute: []client.ScheduleRange{one(0)}, Hour: []client.ScheduleRange{one(12)}, DayOfMonth: []client.ScheduleRange{one(1)}, Month: all(1, 12), DayOfWeek: all(0, 6)},
			{Minute: []client.ScheduleRange{one(0)}, Hour: []client.ScheduleRange{one(12)}, DayOfMonth: all(1, 31), Month: all(1, 12), DayOfWeek: []client.ScheduleRange{one(1)}},
		},
	} {
		r := &reader{file: "s.yml"}
		c, ok := r.parseCron(nil, expr)
		require.True(t, ok, "%s: %v", expr, r.diags)
		got := c.calendars("")
		for i := range got {
			got[i].Second = nil
		}
		assert.Equal(t, want, got, expr)
	}
}

// TestSet overrides a schedule's fields as az ml schedule create --set
// does, the file's create_job path included.
func TestSet(t *testing.T) {
	file := filepath.Join("testdata", "azureml", "cron-job-schedule.yml")
	s := parseFile(t, file, map[string]string{
		"trigger.time_zone":                            "W. Europe Standard Time",
		"trigger.expression":                           "0 9 * * *",
		"create_job.inputs.greeting":                   "${{ creation_context.trigger_time }}",
		"create_job.settings.continue_on_step_failure": "true",
		"name": "renamed",
	})
	assert.Equal(t, "renamed", s.Name)
	assert.Equal(t, "Europe/Berlin", s.Trigger.Zone.IANA)
	assert.Equal(t, "0 9 * * *", s.Trigger.Expression)
	assert.True(t, strings.HasSuffix(s.Job.File, "simple-pipeline-job.yml"))
	assert.Equal(t, RefTriggerTime, s.Job.Set["inputs.greeting"], "references are written one way")
	assert.Equal(t, "true", s.Job.Set["settings.continue_on_step_failure"])
	assert.Equal(t, "--set create_job.inputs.greeting", s.Job.At["inputs.greeting"].File)
}
