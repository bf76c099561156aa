package metrics

import (
	"encoding/json"
	"fmt"
)

// Point is one reported value of a metric.
type Point struct {
	// Step is the step the script gave, or the value's 1-based index among
	// its metric's reports when it gave none.
	Step int
	// Value is the reported value.
	Value float64
}

// Series is the reported values of each metric, in report order.
type Series map[string][]Point

// Collect groups the metric records by key, in the order they were
// reported; other kinds are ignored. A record without a step gets its
// 1-based index among its key's reports.
func Collect(records []Record) Series {
	s := Series{}
	s.Add(records)
	return s
}

// Add appends the metric records to s, as Collect does, numbering a record
// without a step after the reports s holds already: records read
// incrementally from one file number as if read at once.
func (s Series) Add(records []Record) {
	for _, r := range records {
		if r.Kind != KindMetric {
			continue
		}
		step := len(s[r.Key]) + 1
		if r.HasStep {
			step = r.Step
		}
		s[r.Key] = append(s[r.Key], Point{Step: step, Value: r.Value})
	}
}

// Last is the last reported value of key, and whether there is one.
func (s Series) Last(key string) (Point, bool) {
	pts := s[key]
	if len(pts) == 0 {
		return Point{}, false
	}
	return pts[len(pts)-1], true
}

// point is a Point as JSON, its value possibly a string.
type point struct {
	Step  int             `json:"step"`
	Value json.RawMessage `json:"value"`
}

// MarshalJSON encodes p as {"step", "value"}, a NaN or infinite value as
// the string "NaN", "Infinity" or "-Infinity".
func (p Point) MarshalJSON() ([]byte, error) {
	return json.Marshal(point{Step: p.Step, Value: floatJSON(p.Value)})
}

// UnmarshalJSON decodes what MarshalJSON encodes.
func (p *Point) UnmarshalJSON(b []byte) error {
	var q point
	if err := json.Unmarshal(b, &q); err != nil {
		return err
	}
	v, ok := metricValue(q.Value)
	if !ok {
		return fmt.Errorf("metric point %.80s: want a number or \"NaN\", \"Infinity\", \"-Infinity\" as value", b)
	}
	*p = Point{Step: q.Step, Value: v}
	return nil
}
