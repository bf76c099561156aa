package workflows

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"

	"github.com/porch-pipelines/porch/graph"
)

// answerBudget bounds the JSON a Pipeline's steps and graph queries answer:
// under the SDK's warning size for a payload (512 KiB, logged by the
// worker), a quarter of Temporal's 2 MB limit, past which a query fails
// (TMPRL1103). A reader pages through a larger run's steps (StepsPage),
// and builds a larger run's graph from its plan (RunGraph). Pages are as
// large as that allows: a query on a run that ended replays its last
// execution's history each time (0.8 s for a 10,000-step run's on a
// loaded machine).
const answerBudget = 448 << 10

// StepsPage is the steps query's optional argument: the steps of the run
// from index Start (in plan order), at most Max of them (0: as many as fit
// in the answer). Asked with one, the query answers a StepsPageAnswer;
// asked with none, it answers the run's steps as a list, as many from the
// first as fit (all of them for all but the largest runs).
type StepsPage struct {
	Start int `json:"start"`
	Max   int `json:"max,omitempty"`
	// Gzip asks for the page's steps as their JSON list gzipped, in
	// StepsPageAnswer.Gzip: a page then holds several times more steps,
	// and a run that ended, which replays its history for each query, is
	// read in fewer.
	Gzip bool `json:"gzip,omitempty"`
}

// StepsPageAnswer is the steps query's answer to a StepsPage.
type StepsPageAnswer struct {
	Steps []StepState `json:"steps"`
	// Gzip is the page's steps as a gzipped JSON list, in place of Steps,
	// when the page asked for it.
	Gzip []byte `json:"gzip,omitempty"`
	// Next is the index of the first step after Steps: the Start of the
	// next page, Total when there is none.
	Next  int `json:"next"`
	Total int `json:"total"`
}

// stepsAnswer answers the steps query: a page when asked for one (page is
// nil when the query has no argument), else the steps from the first that
// fit.
func (d *dag) stepsAnswer(page *StepsPage) (any, error) {
	if page == nil {
		steps, _ := d.page(0, 0)
		return steps, nil
	}
	if page.Start < 0 || page.Max < 0 {
		return nil, fmt.Errorf("steps query: start %d and max %d cannot be negative", page.Start, page.Max)
	}
	if page.Gzip {
		gz, next, err := d.gzipPage(page.Start, page.Max)
		return StepsPageAnswer{Gzip: gz, Next: next, Total: len(d.nodes)}, err
	}
	steps, next := d.page(page.Start, page.Max)
	return StepsPageAnswer{Steps: steps, Next: next, Total: len(d.nodes)}, nil
}

// gzipFlush is how much JSON gzipPage writes between flushes: the
// compressed size it has not seen yet is at most that.
const gzipFlush = 64 << 10

// gzipPage is the states of the steps from start, at most limit (0: no
// bound), as their JSON list gzipped, within answerBudget once encoded in
// the answer (base64, 4 bytes for 3), and the index after them. It holds
// at least one step when start is a step.
func (d *dag) gzipPage(start, limit int) ([]byte, int, error) {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	room := answerBudget*3/4 - 1<<10
	// raw is what was written since the last flush, a bound on the
	// compressed bytes not yet in buf.
	raw := 0
	write := func(b []byte) error {
		raw += len(b)
		_, err := zw.Write(b)
		return err
	}
	if err := write([]byte("[")); err != nil {
		return nil, start, err
	}
	i := start
	for ; i < len(d.nodes) && (limit == 0 || i-start < limit); i++ {
		js, err := json.Marshal(d.nodes[i].state)
		if err != nil {
			return nil, start, err
		}
		if i > start && buf.Len()+raw+len(js)+1 > room {
			if err := zw.Flush(); err != nil {
				return nil, start, err
			}
			raw = 0
			if buf.Len()+len(js)+1 > room {
				break
			}
		}
		if i > start {
			if err := write([]byte(",")); err != nil {
				return nil, start, err
			}
		}
		if err := write(js); err != nil {
			return nil, start, err
		}
		if raw >= gzipFlush {
			if err := zw.Flush(); err != nil {
				return nil, start, err
			}
			raw = 0
		}
	}
	if err := write([]byte("]")); err != nil {
		return nil, start, err
	}
	if err := zw.Close(); err != nil {
		return nil, start, err
	}
	return buf.Bytes(), i, nil
}

// page is the states of the steps from start, at most limit (0: no bound),
// whose JSON list stays within answerBudget, and the index after them.
// It holds at least one step when start is a step, so a reader always
// moves on.
func (d *dag) page(start, limit int) ([]StepState, int) {
	out := []StepState{}
	size := len("[]")
	i := start
	for ; i < len(d.nodes) && (limit == 0 || len(out) < limit); i++ {
		st := d.nodes[i].state
		js, err := json.Marshal(st)
		if err != nil {
			// StepState always encodes; were it not to, the SDK's
			// encoding of the answer would say why.
			js = nil
		}
		if len(out) > 0 && size+len(",")+len(js) > answerBudget {
			break
		}
		size += len(",") + len(js)
		out = append(out, st)
	}
	return out, i
}

// graphAnswer answers the graph query: the pipeline's graph, or for a run
// whose graph passes answerBudget an error that says where to read it.
func (d *dag) graphAnswer() (graph.Graph, error) {
	g := graph.Of(d.in.Pipeline)
	js, err := json.Marshal(g)
	if err == nil && len(js) > answerBudget {
		return graph.Graph{}, fmt.Errorf("the graph of this run's %d steps is %d bytes of JSON, more than the %d a query answers: "+
			"porch job graph and porch's page build it from the run's plan", g.Len(), len(js), answerBudget)
	}
	return g, nil
}
