package fleet

import (
	"slices"
	"testing"
	"time"
)

func TestDecide(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	ago := func(d time.Duration) time.Time { return now.Add(-d) }
	idle := func(name string, d time.Duration) NodeState { return NodeState{Name: name, IdleSince: ago(d)} }
	busy := func(name string) NodeState { return NodeState{Name: name, Busy: true} }
	p := Policy{Min: 0, Max: 2, IdleTimeout: 5 * time.Second}
	tests := []struct {
		name    string
		policy  Policy
		backlog int
		nodes   []NodeState
		want    Decision
	}{
		{"nothing to do", p, 0, nil, Decision{}},
		{"a backlog starts nodes up to max", p, 3, nil, Decision{Want: 2, Start: 2}},
		{"a backlog within max starts one node each", Policy{Max: 4}, 3, nil, Decision{Want: 3, Start: 3}},
		{"min nodes run without a backlog", Policy{Min: 1, Max: 2}, 0, nil, Decision{Want: 1, Start: 1}},
		{"starting nodes count against the backlog", p, 1, []NodeState{idle("n1", 0)}, Decision{Want: 1}},
		{"busy nodes and the backlog add up", Policy{Max: 4}, 2, []NodeState{busy("n1"), idle("n2", time.Second)},
			Decision{Want: 3, Start: 1}},
		{"the cap holds with every node busy", p, 5, []NodeState{busy("n1"), busy("n2")}, Decision{Want: 2}},
		{"an idle node stays within the idle timeout", p, 0, []NodeState{idle("n1", 4*time.Second)}, Decision{}},
		{"an idle node stops after the idle timeout", p, 0, []NodeState{idle("n1", 5*time.Second)},
			Decision{Stop: []string{"n1"}}},
		{"a busy node never stops", p, 0, []NodeState{busy("n1"), idle("n2", time.Hour)}, Decision{Want: 1, Stop: []string{"n2"}}},
		{"min nodes never stop, the longest idle goes first", Policy{Min: 1, Max: 3, IdleTimeout: time.Second}, 0,
			[]NodeState{idle("n1", 10*time.Second), idle("n2", 20*time.Second), idle("n3", 2*time.Second)},
			Decision{Want: 1, Stop: []string{"n2", "n1"}}},
		{"idle nodes stay while there is a backlog", p, 2, []NodeState{idle("n1", time.Hour), idle("n2", time.Hour)},
			Decision{Want: 2}},
		{"a drained compute stops idle nodes at once", Policy{IdleTimeout: time.Hour}, 0,
			[]NodeState{idle("n1", 0), busy("n2")}, Decision{Stop: []string{"n1"}}},
		{"a lowered max stops the excess at once, the rest after the timeout", Policy{Max: 1, IdleTimeout: time.Minute}, 0,
			[]NodeState{idle("n1", time.Second), idle("n2", 2*time.Second), idle("n3", 2*time.Minute)},
			Decision{Stop: []string{"n3", "n2"}}},
		{"a lowered max waits for busy nodes", Policy{Max: 1, IdleTimeout: time.Minute}, 0,
			[]NodeState{busy("n1"), busy("n2"), idle("n3", time.Second)}, Decision{Want: 1, Stop: []string{"n3"}}},
		{"a negative backlog counts as none", p, -1, nil, Decision{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Decide(tt.policy, tt.backlog, tt.nodes, now)
			if got.Want != tt.want.Want || got.Start != tt.want.Start || !slices.Equal(got.Stop, tt.want.Stop) {
				t.Errorf("Decide = %+v, want %+v", got, tt.want)
			}
		})
	}
}
