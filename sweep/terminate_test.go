package sweep

import (
	"testing"

	"github.com/porch-pipelines/porch/compiler/plan"
	"github.com/stretchr/testify/require"
)

// ramp is a series of n reports rising linearly to last.
func ramp(trial, n int, last float64, finished bool) Series {
	s := Series{Trial: trial, Finished: finished}
	for i := 1; i <= n; i++ {
		s.Points = append(s.Points, Point{Step: i, Value: last * float64(i) / float64(n)})
	}
	return s
}

// reports is a series of the given values, one report each.
func reports(trial int, finished bool, values ...float64) Series {
	s := Series{Trial: trial, Finished: finished}
	for i, v := range values {
		s.Points = append(s.Points, Point{Step: i + 1, Value: v})
	}
	return s
}

func TestTerminateBandit(t *testing.T) {
	// Azure: "Consider a Bandit policy with slack_factor = 0.2 and
	// evaluation_interval = 100. Assume that run X is the currently best
	// performing run with an AUC of 0.8 after 100 intervals. Further, assume
	// the best AUC reported for a run is Y. This policy compares the value
	// (Y + Y * 0.2) to 0.8, and if smaller, cancels the run. If
	// delay_evaluation = 200, then the first time the policy will be applied
	// is at interval 200."
	factor := plan.EarlyTermination{Policy: plan.PolicyBandit, SlackFactor: 0.2, EvaluationInterval: 100}
	aucs := []Series{
		ramp(1, 100, 0.8, false),  // X, the best run
		ramp(2, 100, 0.66, false), // 0.66*1.2 = 0.792 < 0.8: cancelled
		ramp(3, 100, 0.67, false), // 0.67*1.2 = 0.804: kept
		ramp(4, 99, 0.1, false),   // interval 99 is no evaluation interval
		ramp(5, 100, 0.1, true),   // finished: nothing to stop
	}
	require.Equal(t, []int{2}, Terminate(factor, plan.GoalMaximize, aucs))

	delayed := factor
	delayed.DelayEvaluation = 200
	require.Empty(t, Terminate(delayed, plan.GoalMaximize, aucs), "delay_evaluation 200: no evaluation at 100")
	at200 := []Series{ramp(1, 200, 0.8, false), ramp(2, 200, 0.66, false)}
	require.Equal(t, []int{2}, Terminate(delayed, plan.GoalMaximize, at200))

	// Azure: "consider a Bandit policy with slack_amount = 0.2 and
	// evaluation_interval = 100. If run 3 is the currently best performing
	// run with an AUC of 0.8 after 100 intervals, then any run with an AUC
	// less than 0.6 (0.8 - 0.2) after 100 iterations will be terminated."
	amount := plan.EarlyTermination{Policy: plan.PolicyBandit, SlackAmount: 0.2, EvaluationInterval: 100}
	runs := []Series{ramp(1, 100, 0.59, false), ramp(2, 100, 0.61, false), ramp(3, 100, 0.8, false)}
	require.Equal(t, []int{1}, Terminate(amount, plan.GoalMaximize, runs))
}

func TestTerminateBanditEveryInterval(t *testing.T) {
	// Azure: "the early termination policy is applied at every interval
	// when metrics are reported, starting at evaluation interval 5. Any run
	// whose best metric is less than (1/(1+0.1)) or 91% of the best
	// performing run will be terminated."
	p := plan.EarlyTermination{Policy: plan.PolicyBandit, SlackFactor: 0.1, EvaluationInterval: 1, DelayEvaluation: 5}
	best := reports(1, false, 0.5, 0.7, 0.8, 0.9, 1.0, 1.0)
	poor := reports(2, false, 0.1, 0.2, 0.3, 0.4)
	require.Empty(t, Terminate(p, plan.GoalMaximize, []Series{best, poor}), "interval 4 comes before the delay")
	poor = reports(2, false, 0.1, 0.2, 0.3, 0.4, 0.90)
	require.Equal(t, []int{2}, Terminate(p, plan.GoalMaximize, []Series{best, poor}), "0.90 < 1.0/1.1 = 0.909")
	poor = reports(2, false, 0.1, 0.2, 0.3, 0.4, 0.91)
	require.Empty(t, Terminate(p, plan.GoalMaximize, []Series{best, poor}), "0.91 >= 0.909")
}

func TestTerminateBanditComparesUpToTheInterval(t *testing.T) {
	// Run 1 reached 0.95 by interval 150 but had 0.7 at interval 100; run 2,
	// at interval 100 with 0.6, is compared with 0.7: 0.6*1.2 = 0.72 keeps it.
	p := plan.EarlyTermination{Policy: plan.PolicyBandit, SlackFactor: 0.2, EvaluationInterval: 100}
	old := ramp(1, 100, 0.7, false)
	for i := 101; i <= 150; i++ {
		old.Points = append(old.Points, Point{Step: i, Value: 0.95})
	}
	require.Empty(t, Terminate(p, plan.GoalMaximize, []Series{old, ramp(2, 100, 0.6, false)}))
}

func TestTerminateBanditMinimize(t *testing.T) {
	// Minimizing a loss, the slack goes the other way: with slack_factor
	// 0.1 and a best loss of 1.0, a run above 1.1 stops; with slack_amount
	// 0.5, a run above 1.5.
	loss := []Series{
		reports(1, true, 3, 2, 1.0),
		reports(2, false, 3, 2, 1.11),
		reports(3, false, 3, 2, 1.09),
		reports(4, false, 3, 2, 1.6),
	}
	factor := plan.EarlyTermination{Policy: plan.PolicyBandit, SlackFactor: 0.1, EvaluationInterval: 3}
	require.Equal(t, []int{2, 4}, Terminate(factor, plan.GoalMinimize, loss))
	amount := plan.EarlyTermination{Policy: plan.PolicyBandit, SlackAmount: 0.5, EvaluationInterval: 1}
	require.Equal(t, []int{4}, Terminate(amount, plan.GoalMinimize, loss))
}

func TestTerminateMedianStopping(t *testing.T) {
	// Azure: "the early termination policy is applied at every interval
	// starting at evaluation interval 5. A run will be terminated at
	// interval 5 if its best primary metric is worse than the median of the
	// running averages over intervals 1:5 across all training runs."
	p := plan.EarlyTermination{Policy: plan.PolicyMedianStopping, EvaluationInterval: 1, DelayEvaluation: 5}
	series := []Series{
		reports(1, false, 0.5, 0.6, 0.7, 0.8, 0.9), // average 0.70, best 0.9
		reports(2, false, 0.4, 0.5, 0.6, 0.6, 0.6), // average 0.54, best 0.6
		reports(3, false, 0.1, 0.2, 0.3, 0.3, 0.3), // average 0.24, best 0.3 < median 0.54: stopped
		reports(4, false, 0.0, 0.0, 0.0),           // interval 3: not evaluated, not in the median
	}
	require.Equal(t, []int{3}, Terminate(p, plan.GoalMaximize, series))
	require.Empty(t, Terminate(p, plan.GoalMaximize, []Series{
		reports(1, false, 0.5, 0.6, 0.7, 0.8), reports(2, false, 0.1, 0.1, 0.1, 0.1),
	}), "interval 4 comes before delay_evaluation 5")

	// Minimize: losses mirror the accuracies above; a finished run still
	// counts in the median.
	loss := []Series{
		reports(1, true, 0.5, 0.4, 0.3, 0.2, 0.1),   // average 0.30
		reports(2, false, 0.6, 0.5, 0.4, 0.4, 0.4),  // average 0.46, best 0.4
		reports(3, false, 0.9, 0.8, 0.7, 0.7, 0.7),  // average 0.76, best 0.7: stopped
		reports(4, false, 0.9, 0.9, 0.9, 0.9, 0.45), // average 0.81, best 0.45: kept
	}
	// Averages 0.30, 0.46, 0.76, 0.81: the median is (0.46+0.76)/2 = 0.61,
	// and only run 3's best (0.7) is worse than that.
	require.Equal(t, []int{3}, Terminate(p, plan.GoalMinimize, loss))
}

func TestTerminateTruncationSelection(t *testing.T) {
	// Azure: "truncation_percentage=20, evaluation_interval=1,
	// delay_evaluation=5 ... a job terminates at interval 5 if its
	// performance at interval 5 is in the lowest 20% of performance of all
	// jobs at interval 5 and will exclude finished jobs when applying the
	// policy."
	p := plan.EarlyTermination{Policy: plan.PolicyTruncationSelection, TruncationPercentage: 20,
		EvaluationInterval: 1, DelayEvaluation: 5, ExcludeFinishedJobs: true}
	at5 := func(trial int, finished bool, v float64) Series {
		return reports(trial, finished, 0, 0, 0, 0, v)
	}
	series := []Series{
		at5(1, false, 0.9), at5(2, false, 0.8), at5(3, false, 0.7), at5(4, false, 0.6),
		at5(5, false, 0.5), // lowest of 5 running jobs: 20% of 5 is 1, so cut
		at5(6, true, 0.4),  // finished: left out of the ranking
	}
	require.Equal(t, []int{5}, Terminate(p, plan.GoalMaximize, series))

	// With finished jobs ranked, 6 jobs: floor(1.2) = 1 job is cut, and the
	// lowest is the finished one, which cannot be stopped.
	withFinished := p
	withFinished.ExcludeFinishedJobs = false
	require.Empty(t, Terminate(withFinished, plan.GoalMaximize, series))

	// Three jobs: 20% of 3 is 0.6, less than one job, so none is cut.
	require.Empty(t, Terminate(p, plan.GoalMaximize, series[:3]))
	// Ties are not "lowest": five equal jobs all stay.
	ties := []Series{at5(1, false, 1), at5(2, false, 1), at5(3, false, 1), at5(4, false, 1), at5(5, false, 1)}
	require.Empty(t, Terminate(p, plan.GoalMaximize, ties))
	// Minimize: the highest loss is the lowest performance.
	require.Equal(t, []int{1}, Terminate(p, plan.GoalMinimize, series[:5]))
}

func TestTerminateTruncationComparesAtTheInterval(t *testing.T) {
	// "When ranking a relatively young run, the policy uses the
	// corresponding (and earlier) performance of older runs": old runs at
	// interval 9 are ranked by what they had at interval 5.
	p := plan.EarlyTermination{Policy: plan.PolicyTruncationSelection, TruncationPercentage: 25, EvaluationInterval: 5}
	young := reports(4, false, 0, 0, 0, 0, 0.55)
	olds := []Series{
		reports(1, false, 0, 0, 0, 0, 0.5, 0.9, 0.9, 0.9, 0.9),
		reports(2, false, 0, 0, 0, 0, 0.6, 0.9, 0.9, 0.9, 0.9),
		reports(3, false, 0, 0, 0, 0, 0.7, 0.9, 0.9, 0.9, 0.9),
	}
	require.Empty(t, Terminate(p, plan.GoalMaximize, append(olds, young)), "0.55 beats run 1's 0.5 at interval 5")
	young = reports(4, false, 0, 0, 0, 0, 0.45)
	require.Equal(t, []int{4}, Terminate(p, plan.GoalMaximize, append(olds, young)))
}

func TestTerminateEvaluationIntervals(t *testing.T) {
	// "the policy applies every multiple of evaluation_interval that is
	// greater than or equal to delay_evaluation": interval 2, delay 3
	// evaluates at 4, 6, 8, ...
	p := plan.EarlyTermination{Policy: plan.PolicyBandit, SlackAmount: 0, EvaluationInterval: 2, DelayEvaluation: 3}
	best := ramp(1, 10, 10, false)
	for k, want := range map[int]bool{1: false, 2: false, 3: false, 4: true, 5: false, 6: true, 7: false, 8: true} {
		worse := reports(2, false)
		for i := 1; i <= k; i++ {
			worse.Points = append(worse.Points, Point{Step: i, Value: -1})
		}
		got := Terminate(p, plan.GoalMaximize, []Series{best, worse})
		require.Equal(t, want, len(got) == 1, "interval %d", k)
	}
	// evaluation_interval 0 (the Python SDK's default) means every report.
	zero := plan.EarlyTermination{Policy: plan.PolicyBandit, SlackAmount: 0}
	require.Equal(t, []int{2}, Terminate(zero, plan.GoalMaximize, []Series{best, reports(2, false, -1)}))
}

func TestTerminateBatchedReports(t *testing.T) {
	// Metrics read in batches: run 2's reports 4, 5 and 6 arrive together.
	// Evaluated at its latest report only (6, not a multiple of 5), it
	// would escape; with New = 3 it is evaluated at interval 5, where 0.5 <
	// 1.0/1.2.
	p := plan.EarlyTermination{Policy: plan.PolicyBandit, SlackFactor: 0.2, EvaluationInterval: 5}
	best := reports(1, false, 1, 1, 1, 1, 1, 1)
	poor := reports(2, false, 0.1, 0.2, 0.3, 0.4, 0.5, 0.9)
	require.Empty(t, Terminate(p, plan.GoalMaximize, []Series{best, poor}))
	poor.New = 3
	require.Equal(t, []int{2}, Terminate(p, plan.GoalMaximize, []Series{best, poor}))
	// Run 2 is judged at interval 5 on what it had then, not on its 0.9 at 6.
	poor.Points[4].Value = 0.84
	require.Empty(t, Terminate(p, plan.GoalMaximize, []Series{best, poor}), "0.84 >= 1.0/1.2 = 0.833")
}
