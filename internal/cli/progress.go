package cli

import (
	"fmt"
	"io"
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
}

func newPlainProgress(w io.Writer, loc *time.Location) *plainProgress {
	return &plainProgress{w: w, loc: loc, last: map[string]workflows.StepState{}, started: map[string]bool{}}
}

// Update prints the changes since the previous snapshot.
func (p *plainProgress) Update(now time.Time, steps []workflows.StepState) {
	for _, s := range steps {
		prev, seen := p.last[s.Path]
		if seen && prev.Status == s.Status && prev.Attempt == s.Attempt {
			continue
		}
		p.last[s.Path] = s
		p.step(now, s)
	}
}

// Done prints what changed in the final snapshot.
func (p *plainProgress) Done(now time.Time, steps []workflows.StepState) { p.Update(now, steps) }

func (p *plainProgress) step(now time.Time, s workflows.StepState) {
	switch s.Status {
	case workflows.StatusRunning:
		if !p.started[s.Path] {
			p.printStart(now, s)
		} else if s.Attempt > 1 {
			p.printf(now, "step %s retrying (attempt %d)", s.Path, s.Attempt)
		}
	case workflows.StatusSucceeded, workflows.StatusFailed, workflows.StatusCanceled:
		// A step can start and end between two polls: still tell its start.
		if !p.started[s.Path] && !s.Started.IsZero() {
			p.printStart(s.Started, s)
		}
		at := eventTime(s.Ended, now)
		msg := fmt.Sprintf("step %s %s", s.Path, s.Status)
		if !s.Started.IsZero() && !s.Ended.IsZero() {
			msg += " in " + formatDuration(s.Ended.Sub(s.Started))
		}
		if s.Status == workflows.StatusFailed && s.Error != "" {
			msg += ": " + firstLine(s.Error)
		}
		p.printf(at, "%s", msg)
	case workflows.StatusSkipped:
		p.printf(eventTime(s.Ended, now), "step %s skipped", s.Path)
	}
}

func (p *plainProgress) printStart(now time.Time, s workflows.StepState) {
	p.started[s.Path] = true
	msg := "step " + s.Path + " started"
	if s.Attempt > 1 {
		msg += fmt.Sprintf(" (attempt %d)", s.Attempt)
	}
	p.printf(eventTime(s.Started, now), "%s", msg)
}

func (p *plainProgress) printf(at time.Time, format string, args ...any) {
	fmt.Fprintf(p.w, "%s %s\n", at.In(p.loc).Format("15:04:05"), fmt.Sprintf(format, args...))
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

// Done draws the final view, without a spinner.
func (t *termProgress) Done(now time.Time, steps []workflows.StepState) { t.draw(now, steps, false) }

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
	}[s.Status]
	if sym == "" {
		sym = "?"
	}
	line := fmt.Sprintf("%s %-*s", sym, width, s.Path)
	if d, ok := stepDuration(now, s); ok {
		line += "  " + formatDuration(d)
	} else if s.Status == workflows.StatusSkipped || s.Status == workflows.StatusWaiting {
		line += "  " + string(s.Status)
	}
	if s.Attempt > 1 {
		line += fmt.Sprintf("  attempt %d", s.Attempt)
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
