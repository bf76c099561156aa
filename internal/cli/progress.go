package cli

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/porch-pipelines/porch/workflows"
)

// progress shows a run's steps as they change. Update is called with a full
// snapshot every poll; Done with the last one.
type progress interface {
	Update(now time.Time, steps []workflows.StepState)
	Done(now time.Time, steps []workflows.StepState)
}

// newProgress returns the redrawn view on a terminal, plain lines otherwise.
func newProgress(w io.Writer, terminal bool) progress {
	if terminal {
		return &termProgress{w: w}
	}
	return newPlainProgress(w, time.Local)
}

// plainProgress prints one line per state change, for logs and pipes.
type plainProgress struct {
	w   io.Writer
	loc *time.Location
	// last is each step's status and attempt as last printed.
	last map[string]workflows.StepState
	// started records steps whose start line was printed.
	started map[string]bool
	// detail and detailAt are each step's progress detail as last printed,
	// and when.
	detail   map[string]string
	detailAt map[string]time.Time
}

// detailEvery is how often a plain view prints a running step's progress.
const detailEvery = 5 * time.Second

func newPlainProgress(w io.Writer, loc *time.Location) *plainProgress {
	return &plainProgress{w: w, loc: loc, last: map[string]workflows.StepState{}, started: map[string]bool{},
		detail: map[string]string{}, detailAt: map[string]time.Time{}}
}

// event is one line to print.
type event struct {
	at  time.Time
	end bool
	// depth orders the ends of nested steps before their pipeline's.
	depth int
	path  string
	text  string
}

// Update prints the changes since the previous snapshot, in the order they
// happened: a poll can see several.
func (p *plainProgress) Update(now time.Time, steps []workflows.StepState) {
	var events []event
	for _, s := range steps {
		prev, seen := p.last[s.Path]
		if seen && prev.Status == s.Status && prev.Attempt == s.Attempt {
			if s.Status == workflows.StatusRunning && s.Detail != "" && s.Detail != p.detail[s.Path] &&
				now.Sub(p.detailAt[s.Path]) >= detailEvery {
				p.detail[s.Path], p.detailAt[s.Path] = s.Detail, now
				events = append(events, event{at: now, depth: strings.Count(s.Path, "/"), path: s.Path, text: "step " + s.Path + ": " + s.Detail})
			}
			continue
		}
		p.last[s.Path] = s
		events = append(events, p.events(now, s)...)
	}
	slices.SortStableFunc(events, func(a, b event) int {
		if c := a.at.Compare(b.at); c != 0 {
			return c
		}
		// At the same instant a step that ends frees the one that starts;
		// a step's own start stays before its end (the sort is stable).
		if a.end != b.end && a.path != b.path {
			if a.end {
				return -1
			}
			return 1
		}
		if a.end {
			return b.depth - a.depth
		}
		return 0
	})
	for _, e := range events {
		fmt.Fprintf(p.w, "%s %s\n", e.at.In(p.loc).Format("15:04:05"), e.text)
	}
}

// Done prints what changed in the final snapshot.
func (p *plainProgress) Done(now time.Time, steps []workflows.StepState) { p.Update(now, steps) }

// events are the lines a step's new state calls for.
func (p *plainProgress) events(now time.Time, s workflows.StepState) []event {
	depth := strings.Count(s.Path, "/")
	var out []event
	start := func() {
		p.started[s.Path] = true
		if why := ranWhy(s); why != "" {
			out = append(out, event{at: eventTime(s.Started, now), depth: depth, path: s.Path, text: why})
		}
		text := "step " + s.Path + " started"
		if s.Attempt > 1 {
			text += fmt.Sprintf(" (attempt %d)", s.Attempt)
		}
		out = append(out, event{at: eventTime(s.Started, now), depth: depth, path: s.Path, text: text})
	}
	switch s.Status {
	case workflows.StatusRunning:
		if !p.started[s.Path] {
			start()
		} else if s.Attempt > 1 {
			out = append(out, event{at: now, depth: depth, path: s.Path, text: fmt.Sprintf("step %s retrying (attempt %d)", s.Path, s.Attempt)})
		}
	case workflows.StatusSucceeded, workflows.StatusFailed, workflows.StatusCanceled:
		// A step can start and end between two polls: still tell its start.
		if !p.started[s.Path] && !s.Started.IsZero() {
			start()
		}
		text := fmt.Sprintf("step %s %s", s.Path, s.Status)
		if !s.Started.IsZero() && !s.Ended.IsZero() {
			text += " in " + formatDuration(s.Ended.Sub(s.Started))
		}
		if s.Detail != "" {
			text += " (" + s.Detail + ")"
		}
		if s.Status == workflows.StatusFailed && s.Error != "" {
			text += ": " + firstLine(s.Error)
		}
		out = append(out, event{at: eventTime(s.Ended, now), end: true, depth: depth, path: s.Path, text: text})
	case workflows.StatusSkipped:
		out = append(out, event{at: eventTime(s.Ended, now), end: true, depth: depth, path: s.Path, text: "step " + s.Path + " skipped"})
	case workflows.StatusReused:
		text := "step " + s.Path + " reused"
		if s.Reuse != nil && s.Reuse.FromRun != "" {
			text += " (outputs of run " + s.Reuse.FromRun + ")"
		}
		out = append(out, event{at: eventTime(s.Ended, now), end: true, depth: depth, path: s.Path, text: text})
	}
	return out
}

// eventTime is t, or now when t is unknown.
func eventTime(t, now time.Time) time.Time {
	if t.IsZero() {
		return now
	}
	return t
}

// termProgress redraws one line per step in place.
type termProgress struct {
	w io.Writer
	// lines is how many lines the previous frame drew.
	lines int
	frame int
}

// Update redraws the view.
func (t *termProgress) Update(now time.Time, steps []workflows.StepState) {
	t.frame++
	t.draw(now, steps, true)
}

// Done draws the final view, without a spinner, and below it why steps
// ran that could have reused a record.
func (t *termProgress) Done(now time.Time, steps []workflows.StepState) {
	t.draw(now, steps, false)
	for _, s := range steps {
		if why := ranWhy(s); why != "" {
			fmt.Fprintln(t.w, why)
		}
	}
}

// ranWhy is the line that says why a step ran although a record of it
// existed (or its reuse could not be decided): "step a ran: input "n"
// changed (content 3f2a… → 9c1b…)"; "" for a step that was reused, has
// not started, or ran for the first time.
func ranWhy(s workflows.StepState) string {
	r := s.Reuse
	if r == nil || r.Reason == "" || s.Started.IsZero() || s.Status == workflows.StatusReused {
		return ""
	}
	if r.WasRun == "" && !strings.HasPrefix(r.Reason, workflows.ReasonUndecided) {
		return ""
	}
	return "step " + s.Path + " ran: " + r.Reason
}

func (t *termProgress) draw(now time.Time, steps []workflows.StepState, live bool) {
	var b strings.Builder
	if t.lines > 0 {
		// Back to the first line of the previous frame.
		fmt.Fprintf(&b, "\x1b[%dF", t.lines)
	}
	width := 0
	for _, s := range steps {
		width = max(width, utf8.RuneCountInString(s.Path))
	}
	for _, s := range steps {
		b.WriteString("\x1b[2K")
		b.WriteString(termLine(now, s, width, t.spinner(live)))
		b.WriteByte('\n')
	}
	// Clear what is left of a longer previous frame.
	b.WriteString("\x1b[J")
	t.lines = len(steps)
	io.WriteString(t.w, b.String())
}

var spinnerFrames = []string{"⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"}

func (t *termProgress) spinner(live bool) string {
	if !live {
		return "•"
	}
	return spinnerFrames[t.frame%len(spinnerFrames)]
}

// termLine is one step of the redrawn view: symbol, path, duration, attempt.
func termLine(now time.Time, s workflows.StepState, width int, spin string) string {
	sym := map[workflows.StepStatus]string{
		workflows.StatusWaiting:   "·",
		workflows.StatusRunning:   spin,
		workflows.StatusSucceeded: "✓",
		workflows.StatusFailed:    "✗",
		workflows.StatusSkipped:   "-",
		workflows.StatusCanceled:  "⊘",
		workflows.StatusReused:    "↺",
	}[s.Status]
	if sym == "" {
		sym = "?"
	}
	line := fmt.Sprintf("%s %-*s", sym, width, s.Path)
	if d, ok := stepDuration(now, s); ok {
		line += "  " + formatDuration(d)
	} else if s.Status == workflows.StatusSkipped || s.Status == workflows.StatusWaiting || s.Status == workflows.StatusReused {
		line += "  " + string(s.Status)
	}
	if s.Attempt > 1 {
		line += fmt.Sprintf("  attempt %d", s.Attempt)
	}
	if s.Detail != "" {
		line += "  " + s.Detail
	}
	if s.Status == workflows.StatusFailed && s.Error != "" {
		line += "  " + truncate(firstLine(s.Error), 60)
	}
	return line
}

// stepDuration is how long a step ran, or has been running.
func stepDuration(now time.Time, s workflows.StepState) (time.Duration, bool) {
	if s.Started.IsZero() {
		return 0, false
	}
	end := s.Ended
	if end.IsZero() {
		end = now
	}
	return max(end.Sub(s.Started), 0), true
}

// formatDuration is 0.3s, 12.5s, 2m05s, 1h02m03s.
func formatDuration(d time.Duration) string {
	if d < time.Minute {
		return fmt.Sprintf("%.1fs", d.Seconds())
	}
	d = d.Round(time.Second)
	h, m, s := int(d.Hours()), int(d.Minutes())%60, int(d.Seconds())%60
	if h > 0 {
		return fmt.Sprintf("%dh%02dm%02ds", h, m, s)
	}
	return fmt.Sprintf("%dm%02ds", m, s)
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	return line
}

func truncate(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}
