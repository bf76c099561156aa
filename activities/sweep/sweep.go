package sweep

import (
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"math"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/porch-pipelines/porch/activities/atomicfile"
	"github.com/porch-pipelines/porch/activities/metrics"
	"github.com/porch-pipelines/porch/activities/objectstore"
	"github.com/porch-pipelines/porch/activities/stepio"
	"github.com/porch-pipelines/porch/compiler/plan"
	"github.com/porch-pipelines/porch/sweep"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/worker"
)

// Activities are the activities of sweep steps: they sample trials, read
// the metrics trials log and write the sweep's results.
type Activities struct {
	*stepio.Host
}

// Register registers the activities of sweep steps under their explicit
// names.
func (a *Activities) Register(r worker.ActivityRegistry) {
	a.RegisterLocal(r)
	r.RegisterActivityWithOptions(a.ReadTrialMetrics, activity.RegisterOptions{Name: ReadTrialMetricsName})
	r.RegisterActivityWithOptions(a.FinishSweep, activity.RegisterOptions{Name: FinishSweepName})
	r.RegisterActivityWithOptions(a.PublishSweepOutputs, activity.RegisterOptions{Name: PublishSweepOutputsName})
}

// RegisterLocal registers SampleTrials, which sweep workflows run as a
// local activity: a worker that runs workflows needs it whether or not it
// runs steps.
func (a *Activities) RegisterLocal(r worker.ActivityRegistry) {
	r.RegisterActivityWithOptions(a.SampleTrials, activity.RegisterOptions{Name: SampleTrialsName})
}

// Activity type names of sweep steps.
const (
	SampleTrialsName     = "SampleTrials"
	ReadTrialMetricsName = "ReadTrialMetrics"
	FinishSweepName      = "FinishSweep"
	// PublishSweepOutputsName copies the best trial's outputs to the
	// paths the sweep's outputs name.
	PublishSweepOutputsName = "PublishSweepOutputs"
)

// SampleTrialsInput asks for the next trials of a sweep.
type SampleTrialsInput struct {
	Space    []plan.Parameter    `json:"space"`
	Sampling plan.Sampling       `json:"sampling"`
	Goal     string              `json:"goal"`
	Seed     int64               `json:"seed"`
	Started  int                 `json:"started"`
	N        int                 `json:"n"`
	Observed []sweep.Observation `json:"observed,omitempty"`
}

// SampledTrials are the next trials' parameters.
type SampledTrials struct {
	Assignments []sweep.Assignment `json:"assignments,omitempty"`
	// Exhausted says the search space has no more trials (grid).
	Exhausted bool `json:"exhausted,omitempty"`
}

// SampleTrials proposes a sweep's next trials. The sweep runs it as a local
// activity, so the proposals are recorded in its history and replay never
// samples again.
func (a *Activities) SampleTrials(ctx context.Context, in SampleTrialsInput) (SampledTrials, error) {
	s, err := sweep.NewSampler(in.Space, in.Sampling, in.Goal, in.Seed, in.Started)
	if err != nil {
		return SampledTrials{}, stepio.Invalid("%v", err)
	}
	next, more := s.Next(in.N, in.Observed)
	return SampledTrials{Assignments: next, Exhausted: !more}, nil
}

// TrialMetricsFile is one trial step whose metrics the sweep follows.
type TrialMetricsFile struct {
	Trial int `json:"trial"`
	// StepPath is the step (the trial, or a step inside a pipeline trial)
	// that writes the metrics.
	StepPath string `json:"step_path"`
	Offset   int64  `json:"offset"`
}

// ReadTrialMetricsInput reads what trials reported since the last read.
type ReadTrialMetricsInput struct {
	RunID     string             `json:"run_id"`
	Datastore string             `json:"datastore"`
	Metric    string             `json:"metric"`
	Files     []TrialMetricsFile `json:"files"`
}

// TrialMetrics is what one trial reported since the last read.
type TrialMetrics struct {
	Trial  int   `json:"trial"`
	Offset int64 `json:"offset"`
	// Reset says the file started over (the trial's step was retried):
	// earlier points are void.
	Reset  bool          `json:"reset,omitempty"`
	Points []sweep.Point `json:"points,omitempty"`
}

// maxMetricsRead bounds one read of one trial's metrics file.
const maxMetricsRead = 256 << 10

// ReadTrialMetrics reads the primary metric's new reports from each trial's
// metrics file.
func (a *Activities) ReadTrialMetrics(ctx context.Context, in ReadTrialMetricsInput) ([]TrialMetrics, error) {
	a.RefreshDatastores(ctx)
	out := make([]TrialMetrics, 0, len(in.Files))
	for _, f := range in.Files {
		path, done, err := a.trialMetricsFile(ctx, stepio.StepArtifactsURI(in.Datastore, in.RunID, f.StepPath))
		if err != nil {
			return nil, fmt.Errorf("trial %d: %w", f.Trial, err)
		}
		defer done()
		tm := TrialMetrics{Trial: f.Trial, Offset: f.Offset}
		if info, err := os.Stat(path); err == nil && info.Size() < f.Offset {
			tm.Reset, tm.Offset = true, 0
		}
		records, next, err := metrics.Read(path, tm.Offset, maxMetricsRead)
		if err != nil {
			return nil, fmt.Errorf("trial %d: read %s: %w", f.Trial, path, err)
		}
		tm.Offset = next
		for _, r := range records {
			// A NaN or infinite value (a diverged loss) ranks nowhere; it
			// is not a report early termination can compare.
			if r.Kind == metrics.KindMetric && r.Key == in.Metric && !math.IsNaN(r.Value) && !math.IsInf(r.Value, 0) {
				tm.Points = append(tm.Points, sweep.Point{Step: r.Step, Value: r.Value})
			}
		}
		out = append(out, tm)
	}
	return out, nil
}

// trialMetricsFile is the metrics file of the step whose artifacts are at
// uri, and what to call when done with it. It is this worker's own when the
// step ran here. A step that ran on another worker of an s3 datastore
// copied its file there when it ended: a copy of that is read instead, so
// a sweep whose trials run across a fleet sees their final reports (their
// reports while they run stay on the trial's worker).
func (a *Activities) trialMetricsFile(ctx context.Context, uri string) (string, func(), error) {
	dir, err := a.ArtifactsPath(uri)
	if err != nil {
		return "", nil, stepio.Invalid("%v", err)
	}
	local := filepath.Join(dir, metrics.FileName)
	d, p, onS3 := a.ObjectLocation(uri)
	if _, err := os.Stat(local); err == nil || !onS3 {
		return local, func() {}, nil
	}
	s, err := a.ObjectStore(d)
	if err != nil {
		return "", nil, err
	}
	tmp, err := os.CreateTemp("", "porch-trial-metrics-*")
	if err != nil {
		return "", nil, err
	}
	tmp.Close()
	done := func() { os.Remove(tmp.Name()) }
	var oe *objectstore.Error
	switch err := s.GetFile(ctx, path.Join(p, metrics.FileName), tmp.Name()); {
	case errors.As(err, &oe) && oe.NotFound():
		done()
		return local, func() {}, nil
	case err != nil:
		done()
		return "", nil, err
	}
	return tmp.Name(), done, nil
}

// TrialRecord is one trial as trials.csv lists it.
type TrialRecord struct {
	Trial   int              `json:"trial"`
	Params  sweep.Assignment `json:"params"`
	Status  string           `json:"status"`
	Last    *float64         `json:"last,omitempty"`
	Best    *float64         `json:"best,omitempty"`
	Started time.Time        `json:"started"`
	Ended   time.Time        `json:"ended"`
	IsBest  bool             `json:"is_best,omitempty"`
	Error   string           `json:"error,omitempty"`
}

// FinishSweepInput ends a sweep.
type FinishSweepInput struct {
	RunID     string        `json:"run_id"`
	StepPath  string        `json:"step_path"`
	Datastore string        `json:"datastore"`
	Metric    string        `json:"metric"`
	Trials    []TrialRecord `json:"trials"`
}

// FinishSweep writes trials.csv in the sweep step's artifacts folder: one
// row per trial with its parameters, last and best metric, status and
// duration, the best marked.
func (a *Activities) FinishSweep(ctx context.Context, in FinishSweepInput) (string, error) {
	a.RefreshDatastores(ctx)
	dir, err := a.ArtifactsPath(stepio.StepArtifactsURI(in.Datastore, in.RunID, in.StepPath))
	if err != nil {
		return "", stepio.Invalid("step %q: %v", in.StepPath, err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("step %q: %w", in.StepPath, err)
	}
	var names []string
	seen := map[string]bool{}
	for _, t := range in.Trials {
		for _, v := range t.Params {
			if !seen[v.Name] {
				seen[v.Name] = true
				names = append(names, v.Name)
			}
		}
	}
	var b strings.Builder
	w := csv.NewWriter(&b)
	header := append([]string{"trial"}, names...)
	header = append(header, "last_"+in.Metric, "best_"+in.Metric, "status", "duration_seconds", "best", "error")
	_ = w.Write(header)
	for _, t := range in.Trials {
		row := []string{strconv.Itoa(t.Trial)}
		for _, n := range names {
			row = append(row, paramText(t.Params, n))
		}
		d := ""
		if !t.Started.IsZero() && !t.Ended.IsZero() {
			d = strconv.FormatFloat(t.Ended.Sub(t.Started).Seconds(), 'f', 1, 64)
		}
		best := ""
		if t.IsBest {
			best = "*"
		}
		row = append(row, floatText(t.Last), floatText(t.Best), t.Status, d, best, stepio.FirstLine(t.Error))
		_ = w.Write(row)
	}
	w.Flush()
	path := filepath.Join(dir, "trials.csv")
	return path, atomicfile.Write(path, []byte(b.String()))
}

func paramText(a sweep.Assignment, name string) string {
	for _, v := range a {
		if v.Name == name {
			return v.Text
		}
	}
	return ""
}

func floatText(f *float64) string {
	if f == nil {
		return ""
	}
	return strconv.FormatFloat(*f, 'g', 6, 64)
}
