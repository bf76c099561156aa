package sweep

import (
	"sort"

	"github.com/porch-pipelines/porch/compiler/plan"
)

// Series is one trial's primary metric as reported so far.
type Series struct {
	Trial int `json:"trial"`
	// Points are in reported order.
	Points []Point `json:"points"`
	// Finished is set once the trial has ended (in any way).
	Finished bool `json:"finished"`
	// New is how many of Points arrived since the previous call to
	// Terminate, for a caller that reads metrics in batches: the trial is
	// evaluated at every evaluation interval among its last max(New, 1)
	// reports, so an interval inside a batch is not skipped. 0 evaluates the
	// latest report only, which is exact for a caller that calls Terminate
	// after every report.
	New int `json:"new,omitempty"`
}

// Point is one report of the primary metric.
type Point struct {
	// Step is the interval: the 1-based count of the trial's reports.
	Step  int     `json:"step"`
	Value float64 `json:"value"`
}

// Terminate returns, in increasing order, the running trials (Finished
// false) that policy p stops now; goal is maximize or minimize.
//
// Azure ML counts each report of the primary metric as one interval and
// "applies the policy every multiple of evaluation_interval that is greater
// than or equal to delay_evaluation". porch evaluates a running trial when
// its latest report's Step k is such a multiple (evaluation_interval 0
// counts as 1), so the caller calls Terminate after every report. The trial
// is compared with every trial, running or finished, that has reached
// interval k, each taken up to interval k only: "when evaluating a run at
// interval N, its performance is only compared with the performance of
// other runs up to interval N even if they reported metrics for intervals
// greater than N". Non-finite values are ignored.
func Terminate(p plan.EarlyTermination, goal string, series []Series) []int {
	better := func(a, b float64) bool { return a > b }
	if goal == plan.GoalMinimize {
		better = func(a, b float64) bool { return a < b }
	}
	var stop []int
	for _, s := range series {
		if s.Finished {
			continue
		}
		for _, k := range evaluationSteps(p, s) {
			if stops(p, goal, better, s, reached(series, k), k) {
				stop = append(stop, s.Trial)
				break
			}
		}
	}
	sort.Ints(stop)
	return stop
}

// evaluationSteps is the intervals at which a trial is evaluated now: the
// Steps of its last max(New, 1) reports that are multiples of
// evaluation_interval at or after delay_evaluation.
func evaluationSteps(p plan.EarlyTermination, s Series) []int {
	interval := max(p.EvaluationInterval, 1)
	var out []int
	for _, pt := range s.Points[max(len(s.Points)-max(s.New, 1), 0):] {
		if k := pt.Step; k >= 1 && k%interval == 0 && k >= p.DelayEvaluation {
			out = append(out, k)
		}
	}
	return out
}

func stops(p plan.EarlyTermination, goal string, better func(a, b float64) bool, s Series, peers []Series, k int) bool {
	switch p.Policy {
	case plan.PolicyBandit:
		return banditStops(p, goal, better, s, peers, k)
	case plan.PolicyMedianStopping:
		return medianStops(better, s, peers, k)
	case plan.PolicyTruncationSelection:
		return truncationStops(p, better, s, peers, k)
	}
	return false
}

func latestStep(s Series) int {
	if len(s.Points) == 0 {
		return 0
	}
	return s.Points[len(s.Points)-1].Step
}

// reached is the trials whose reports reach interval k.
func reached(series []Series, k int) []Series {
	var out []Series
	for _, s := range series {
		if latestStep(s) >= k {
			out = append(out, s)
		}
	}
	return out
}

// bestUpTo is the best finite value a trial reported up to interval k.
func bestUpTo(s Series, k int, better func(a, b float64) bool) (float64, bool) {
	best, ok := 0.0, false
	for _, pt := range s.Points {
		if pt.Step <= k && finite(pt.Value) && (!ok || better(pt.Value, best)) {
			best, ok = pt.Value, true
		}
	}
	return best, ok
}

// meanUpTo is the running average of a trial's finite values up to k.
func meanUpTo(s Series, k int) (float64, bool) {
	sum, n := 0.0, 0
	for _, pt := range s.Points {
		if pt.Step <= k && finite(pt.Value) {
			sum += pt.Value
			n++
		}
	}
	return sum / float64(n), n > 0
}

// valueAt is the value a trial reported at interval k.
func valueAt(s Series, k int) (float64, bool) {
	for _, pt := range s.Points {
		if pt.Step == k && finite(pt.Value) {
			return pt.Value, true
		}
	}
	return 0, false
}

// banditStops: "any run that doesn't fall within the slack factor or slack
// amount of the evaluation metric with respect to the best performing run
// will be terminated". With slack_factor 0.2 and a best run at 0.8, a run
// whose best is Y is cancelled when Y + Y*0.2 < 0.8 (maximize), that is
// Y < 0.8/1.2; with slack_amount 0.2, when Y < 0.8 - 0.2. porch mirrors
// both for minimize: Y > best*(1+slack_factor), Y > best + slack_amount.
// Y and the best are the runs' best values up to interval k.
func banditStops(p plan.EarlyTermination, goal string, better func(a, b float64) bool, s Series, peers []Series, k int) bool {
	y, ok := bestUpTo(s, k, better)
	if !ok {
		return false
	}
	best, found := 0.0, false
	for _, peer := range peers {
		if v, ok := bestUpTo(peer, k, better); ok && (!found || better(v, best)) {
			best, found = v, true
		}
	}
	minimize := goal == plan.GoalMinimize
	switch {
	case p.SlackFactor > 0 && minimize:
		return y > best*(1+p.SlackFactor)
	case p.SlackFactor > 0:
		return y < best/(1+p.SlackFactor)
	case minimize:
		return y > best+p.SlackAmount
	default:
		return y < best-p.SlackAmount
	}
}

// medianStops: "a run will be canceled at interval N if its best primary
// metric reported up to interval N is worse than the median of the running
// averages for intervals 1:N across all runs".
func medianStops(better func(a, b float64) bool, s Series, peers []Series, k int) bool {
	y, ok := bestUpTo(s, k, better)
	if !ok {
		return false
	}
	var avgs []float64
	for _, peer := range peers {
		if m, ok := meanUpTo(peer, k); ok {
			avgs = append(avgs, m)
		}
	}
	return better(median(avgs), y)
}

func median(xs []float64) float64 {
	sort.Float64s(xs)
	n := len(xs)
	if n%2 == 1 {
		return xs[n/2]
	}
	return (xs[n/2-1] + xs[n/2]) / 2
}

// truncationStops: "a job terminates at interval 5 if its performance at
// interval 5 is in the lowest 20% of performance of all jobs at interval 5",
// finished jobs left out of the ranking with exclude_finished_jobs. Of n
// ranked trials, the lowest floor(n * truncation_percentage / 100) are cut:
// a trial is cut when at least n minus that many trials did strictly better
// at interval k, so ties never cut a trial that others merely equal.
func truncationStops(p plan.EarlyTermination, better func(a, b float64) bool, s Series, peers []Series, k int) bool {
	y, ok := valueAt(s, k)
	if !ok {
		return false
	}
	var ranked []float64
	for _, peer := range peers {
		if peer.Finished && p.ExcludeFinishedJobs {
			continue
		}
		if v, ok := valueAt(peer, k); ok {
			ranked = append(ranked, v)
		}
	}
	cut := len(ranked) * p.TruncationPercentage / 100
	if cut == 0 {
		return false
	}
	beaten := 0
	for _, v := range ranked {
		if better(v, y) {
			beaten++
		}
	}
	return beaten >= len(ranked)-cut
}
