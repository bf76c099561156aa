package cluster

import (
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
)

// The PromQL porch's deploy files use, evaluated on one scrape: series
// selectors and sum(...) by (...), enough to check the HPA's adapter rule
// and the dashboard's selectors against what real servers export.

// series is one sample of a scrape, as PromQL names it: a histogram's
// buckets are NAME_bucket with le, its sum and count NAME_sum, NAME_count.
type series struct {
	name   string
	labels map[string]string
	value  float64
}

// parseScrape reads a Prometheus text exposition.
func parseScrape(text string) ([]series, error) {
	var p expfmt.TextParser
	families, err := p.TextToMetricFamilies(strings.NewReader(text))
	if err != nil {
		return nil, err
	}
	var out []series
	for name, f := range families {
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			out = append(out, flatten(name, labels, m)...)
		}
	}
	return out, nil
}

func flatten(name string, labels map[string]string, m *dto.Metric) []series {
	with := func(k, v string) map[string]string {
		out := map[string]string{k: v}
		for lk, lv := range labels {
			out[lk] = lv
		}
		return out
	}
	switch {
	case m.Counter != nil:
		return []series{{name, labels, m.Counter.GetValue()}}
	case m.Gauge != nil:
		return []series{{name, labels, m.Gauge.GetValue()}}
	case m.Untyped != nil:
		return []series{{name, labels, m.Untyped.GetValue()}}
	case m.Histogram != nil:
		h := m.Histogram
		out := []series{{name + "_sum", labels, h.GetSampleSum()}, {name + "_count", labels, float64(h.GetSampleCount())}}
		for _, b := range h.GetBucket() {
			out = append(out, series{name + "_bucket", with("le", strconv.FormatFloat(b.GetUpperBound(), 'g', -1, 64)), float64(b.GetCumulativeCount())})
		}
		return append(out, series{name + "_bucket", with("le", "+Inf"), float64(h.GetSampleCount())})
	case m.Summary != nil:
		s := m.Summary
		return []series{{name + "_sum", labels, s.GetSampleSum()}, {name + "_count", labels, float64(s.GetSampleCount())}}
	}
	return nil
}

// matcher is one label matcher of a selector: =, !=, =~ or !~.
type matcher struct {
	label, op, value string
	re               *regexp.Regexp
}

// selector is a series selector: a metric name and label matchers.
type selector struct {
	name     string
	matchers []matcher
}

var (
	selectorSyntax = regexp.MustCompile(`^\s*([a-zA-Z_:][a-zA-Z0-9_:]*)\s*(?:\{(.*)\})?\s*$`)
	matcherSyntax  = regexp.MustCompile(`^\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*(=~|!~|!=|=)\s*("(?:[^"\\]|\\.)*")\s*$`)
)

// parseSelector reads name{label="value", label=~"re", ...}.
func parseSelector(s string) (selector, error) {
	m := selectorSyntax.FindStringSubmatch(s)
	if m == nil {
		return selector{}, fmt.Errorf("%q is not a series selector", s)
	}
	sel := selector{name: m[1]}
	for _, part := range splitMatchers(m[2]) {
		mm := matcherSyntax.FindStringSubmatch(part)
		if mm == nil {
			return selector{}, fmt.Errorf("%q: %q is not a label matcher", s, part)
		}
		value, err := strconv.Unquote(mm[3])
		if err != nil {
			return selector{}, fmt.Errorf("%q: %v", s, err)
		}
		mt := matcher{label: mm[1], op: mm[2], value: value}
		if strings.Contains(mt.op, "~") {
			if mt.re, err = regexp.Compile("^(?:" + value + ")$"); err != nil {
				return selector{}, fmt.Errorf("%q: %v", s, err)
			}
		}
		sel.matchers = append(sel.matchers, mt)
	}
	return sel, nil
}

// splitMatchers splits a selector's braces at the commas outside quotes.
func splitMatchers(s string) []string {
	var parts []string
	var cur strings.Builder
	quoted, escaped := false, false
	for _, r := range s {
		switch {
		case escaped:
			escaped = false
		case r == '\\' && quoted:
			escaped = true
		case r == '"':
			quoted = !quoted
		case r == ',' && !quoted:
			parts = append(parts, cur.String())
			cur.Reset()
			continue
		}
		cur.WriteRune(r)
	}
	if strings.TrimSpace(cur.String()) != "" {
		parts = append(parts, cur.String())
	}
	return parts
}

// matches says whether a series is one the selector selects; a label a
// series lacks is "".
func (sel selector) matches(s series) bool {
	if s.name != sel.name {
		return false
	}
	for _, m := range sel.matchers {
		v := s.labels[m.label]
		var ok bool
		switch m.op {
		case "=":
			ok = v == m.value
		case "!=":
			ok = v != m.value
		case "=~":
			ok = m.re.MatchString(v)
		case "!~":
			ok = !m.re.MatchString(v)
		}
		if !ok {
			return false
		}
	}
	return true
}

// selectAll is the series a selector selects.
func (sel selector) selectAll(all []series) []series {
	var out []series
	for _, s := range all {
		if sel.matches(s) {
			out = append(out, s)
		}
	}
	return out
}

var sumBy = regexp.MustCompile(`^\s*sum\s*\((.*)\)\s*by\s*\(([^)]*)\)\s*$`)

// evalSumBy evaluates sum(SELECTOR) by (LABELS): the sum of each group of
// selected series, by the group's labels as l1="v1",l2="v2".
func evalSumBy(expr string, all []series) (map[string]float64, error) {
	m := sumBy.FindStringSubmatch(expr)
	if m == nil {
		return nil, fmt.Errorf("%q is not sum(SELECTOR) by (LABELS)", expr)
	}
	sel, err := parseSelector(m[1])
	if err != nil {
		return nil, err
	}
	var by []string
	for _, l := range strings.Split(m[2], ",") {
		by = append(by, strings.TrimSpace(l))
	}
	sort.Strings(by)
	out := map[string]float64{}
	for _, s := range sel.selectAll(all) {
		var key []string
		for _, l := range by {
			key = append(key, fmt.Sprintf("%s=%q", l, s.labels[l]))
		}
		out[strings.Join(key, ",")] += s.value
	}
	return out, nil
}
