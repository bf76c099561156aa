// Package metrics is how a running step reports metrics to porch, as Azure
// ML training scripts report them to mlflow.
//
// A step appends JSON lines to the file named by PORCH_METRICS_FILE (porch
// sets it to metrics.jsonl in the step's artifacts folder). A script may
// write them itself, or call mlflow: porch ships a small standard-library
// Python module named mlflow (embedded in the binary, see ShimDir) that
// writes these lines, and puts it on the step's PYTHONPATH when the step's
// Python has no real mlflow (see Extend). One line is one JSON object:
//
//	{"kind": "metric", "key": "loss", "value": 0.5, "step": 1, "time": 1700000000.25}
//	{"kind": "param", "key": "lr", "value": "0.01", "time": ...}
//	{"kind": "tag", "key": "model", "value": "cnn", "time": ...}
//	{"kind": "artifact", "key": "model", "time": ...}
//
// A metric's value is a JSON number, or one of the strings "NaN",
// "Infinity" and "-Infinity" (JSON has no such numbers); step is an integer,
// or null or absent when the script gave none; time is seconds since the
// Unix epoch. A param's or tag's value is a string. Unknown fields are
// ignored; a line that is not such an object is skipped and counted.
//
// Read reads the file while the step runs: complete lines only, from a byte
// offset, so a caller polls it cheaply. Collect turns records into a metric
// series per key. The package does no Temporal work.
package metrics

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
)

// Record kinds.
const (
	KindMetric   = "metric"
	KindParam    = "param"
	KindTag      = "tag"
	KindArtifact = "artifact"
)

// DefaultMaxBytes is how much Read reads at most when given maxBytes <= 0.
const DefaultMaxBytes = 1 << 20

// Record is one line of a metrics file. It encodes to JSON as that line, so
// records with NaN values can travel as activity results.
type Record struct {
	// Kind is KindMetric, KindParam, KindTag or KindArtifact.
	Kind string
	// Key is the metric's, param's or tag's name, or an artifact's path
	// under ./outputs.
	Key string
	// Value is a metric's value (NaN and infinities included).
	Value float64
	// Step is the step the script gave with a metric; see HasStep.
	Step int
	// HasStep tells a step of 0 from none given.
	HasStep bool
	// Time is when the line was written, in seconds since the Unix epoch.
	Time float64
	// Text is a param's or tag's value.
	Text string
}

// line is a record as written; value and step need a second look.
type line struct {
	Kind  string          `json:"kind"`
	Key   string          `json:"key"`
	Value json.RawMessage `json:"value,omitempty"`
	Step  *json.Number    `json:"step,omitempty"`
	Time  float64         `json:"time"`
}

// MarshalJSON encodes r as a metrics file line.
func (r Record) MarshalJSON() ([]byte, error) {
	l := line{Kind: r.Kind, Key: r.Key, Time: r.Time}
	if r.HasStep {
		n := json.Number(strconv.Itoa(r.Step))
		l.Step = &n
	}
	switch r.Kind {
	case KindMetric:
		l.Value = floatJSON(r.Value)
	case KindArtifact:
	default:
		b, err := json.Marshal(r.Text)
		if err != nil {
			return nil, err
		}
		l.Value = b
	}
	return json.Marshal(l)
}

// UnmarshalJSON decodes a metrics file line.
func (r *Record) UnmarshalJSON(b []byte) error {
	rec, ok := parse(b)
	if !ok {
		return fmt.Errorf("metrics record %.80s: want {\"kind\", \"key\", \"value\", \"step\", \"time\"} with a numeric metric value", b)
	}
	*r = rec
	return nil
}

// parse decodes one line; ok is false for a malformed one.
func parse(b []byte) (Record, bool) {
	var l line
	if err := json.Unmarshal(b, &l); err != nil || l.Kind == "" || l.Key == "" {
		return Record{}, false
	}
	r := Record{Kind: l.Kind, Key: l.Key, Time: l.Time}
	if l.Step != nil {
		step, err := strconv.Atoi(l.Step.String())
		if err != nil {
			return Record{}, false
		}
		r.Step, r.HasStep = step, true
	}
	if l.Kind != KindMetric {
		// A param or tag written by hand may hold a number: keep its text.
		var s string
		if len(l.Value) > 0 && json.Unmarshal(l.Value, &s) != nil {
			s = string(bytes.TrimSpace(l.Value))
		}
		r.Text = s
		return r, true
	}
	v, ok := metricValue(l.Value)
	if !ok {
		return Record{}, false
	}
	r.Value = v
	return r, true
}

// floatJSON encodes f as a JSON number, or as "NaN", "Infinity" or
// "-Infinity", which JSON numbers cannot be.
func floatJSON(f float64) []byte {
	switch {
	case math.IsNaN(f):
		return []byte(`"NaN"`)
	case math.IsInf(f, 1):
		return []byte(`"Infinity"`)
	case math.IsInf(f, -1):
		return []byte(`"-Infinity"`)
	}
	return strconv.AppendFloat(nil, f, 'g', -1, 64)
}

// metricValue reads a JSON number or one of "NaN", "Infinity", "-Infinity".
func metricValue(raw json.RawMessage) (float64, bool) {
	var f float64
	if err := json.Unmarshal(raw, &f); err == nil && len(raw) > 0 && string(raw) != "null" {
		return f, true
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return 0, false
	}
	switch s {
	case "NaN":
		return math.NaN(), true
	case "Infinity", "+Infinity":
		return math.Inf(1), true
	case "-Infinity":
		return math.Inf(-1), true
	}
	return 0, false
}
