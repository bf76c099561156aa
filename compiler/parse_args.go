package compiler

import (
	"strings"

	"github.com/porch-pipelines/porch/compiler/plan"
)

// porchFlags are the program_arguments flags porch reads itself, as Azure
// ML's parallel runner does; the entry script never sees them.
var porchFlags = []string{"--error_threshold", "--allowed_failed_percent", "--task_overhead_timeout",
	"--progress_update_timeout", "--first_task_creation_timeout", "--copy_logs_to_parent",
	"--resource_monitor_interval", "--logging_level"}

// argFlags are the values of porchFlags found in program_arguments.
type argFlags struct {
	ErrorThreshold        optInt
	AllowedFailedPercent  optInt
	TaskOverheadTimeout   optInt
	ProgressUpdateTimeout optInt
	FirstTaskTimeout      optInt
	ResourceMonitor       optInt
	CopyLogsToParent      bool
	LoggingLevel          string
}

// argToken is one whitespace-separated word of program_arguments, with its
// offsets in the value. ${{...}}, $[[...]] and quotes do not split words.
type argToken struct {
	start, end int
}

// splitArgs splits program_arguments into words the way a shell would see
// them after substitution, closely enough to find porch's flags.
func splitArgs(src string) []argToken {
	var out []argToken
	i := 0
	for i < len(src) {
		if isSpace(src[i]) {
			i++
			continue
		}
		start := i
		for i < len(src) && !isSpace(src[i]) {
			switch {
			case strings.HasPrefix(src[i:], "${{"):
				i = skipPast(src, i+3, "}}")
			case strings.HasPrefix(src[i:], "$[["):
				i = skipPast(src, i+3, "]]")
			case src[i] == '"' || src[i] == '\'':
				i = skipPast(src, i+1, src[i:i+1])
			default:
				i++
			}
		}
		out = append(out, argToken{start, i})
	}
	return out
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r'
}

// skipPast returns the offset just after the first end at or after i, or
// len(src) when there is none.
func skipPast(src string, i int, end string) int {
	if j := strings.Index(src[i:], end); j >= 0 {
		return i + j + len(end)
	}
	return len(src)
}

// literal reports whether a word holds no reference or optional group.
func literal(s string) bool {
	return !strings.Contains(s, "${{") && !strings.Contains(s, "$[[")
}

// unquote drops the quotes a shell would remove.
func unquote(s string) string {
	var b strings.Builder
	var q byte
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case q == 0 && (c == '"' || c == '\''):
			q = c
		case q != 0 && c == q:
			q = 0
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// matchFlag returns the porch flag a word names, exactly or as an
// unambiguous prefix (argparse's allow_abbrev), "" for none.
func matchFlag(word string) string {
	if !strings.HasPrefix(word, "--") || len(word) < 3 {
		return ""
	}
	found := ""
	for _, f := range porchFlags {
		if f == word {
			return f
		}
		if strings.HasPrefix(f, word) {
			if found != "" {
				return ""
			}
			found = f
		}
	}
	return found
}

// parseProgramArguments parses program_arguments as a command template,
// then removes the flags porch reads and returns their values.
func (p *parser) parseProgramArguments(s *scalarAST) (plan.Template, []plan.Pos, argFlags) {
	tmpl, refPos := p.parseTemplate(s)
	var flags argFlags
	src := s.Value
	toks := splitArgs(src)
	drop := make([]bool, len(toks))
	for i := 0; i < len(toks); i++ {
		word := src[toks[i].start:toks[i].end]
		head, value, hasValue := strings.Cut(word, "=")
		if !literal(head) {
			continue
		}
		flag := matchFlag(unquote(head))
		if flag == "" {
			continue
		}
		drop[i] = true
		valPos := posAt(s, toks[i].start+len(head)+1)
		if !hasValue {
			if i+1 >= len(toks) || isFlagWord(src[toks[i+1].start:toks[i+1].end]) {
				p.errorf(posAt(s, toks[i].start), "write the value after the flag, as in "+flag+" 5", "%s needs a value", flag)
				continue
			}
			i++
			drop[i] = true
			value, valPos = src[toks[i].start:toks[i].end], posAt(s, toks[i].start)
		}
		if !literal(value) {
			p.errorf(valPos, "write the value itself: porch reads "+flag+" when it plans the step, before any input is bound",
				"the value of %s must be literal, found %q", flag, value)
			continue
		}
		p.setFlag(&flags, flag, unquote(value), valPos)
	}
	for _, d := range drop {
		if d {
			// Every dropped word is literal, so the references left keep
			// the order (and positions) refPos recorded.
			rest := joinKept(src, toks, drop)
			t, _ := (&parser{}).parseTemplate(&scalarAST{Value: rest})
			return t, refPos, flags
		}
	}
	return tmpl, refPos, flags
}

// isFlagWord reports whether a word is an option rather than a value, as
// argparse decides: it starts with "-" and is not a negative number.
func isFlagWord(w string) bool {
	if !strings.HasPrefix(w, "-") || len(w) == 1 {
		return false
	}
	_, isNum := parseNumber(w)
	return !isNum
}

// joinKept rebuilds src without the dropped words and the space before them.
func joinKept(src string, toks []argToken, drop []bool) string {
	var b strings.Builder
	prev := 0
	for i, t := range toks {
		if !drop[i] {
			if b.Len() > 0 {
				b.WriteString(src[prev:t.start])
			}
			b.WriteString(src[t.start:t.end])
		}
		prev = t.end
	}
	if b.Len() > 0 {
		b.WriteString(src[prev:])
	}
	return b.String()
}

// setFlag checks a porch flag's value and records it.
func (p *parser) setFlag(f *argFlags, flag, v string, pos plan.Pos) {
	opt := func(lo, hi int) optInt {
		n, ok := p.checkRange(pos, flag, v, lo, hi)
		return optInt{V: n, Set: ok, Pos: pos}
	}
	switch flag {
	case "--error_threshold":
		f.ErrorThreshold = opt(-1, -1)
	case "--allowed_failed_percent":
		f.AllowedFailedPercent = opt(0, 100)
	case "--task_overhead_timeout":
		f.TaskOverheadTimeout = opt(1, maxTimeout)
	case "--progress_update_timeout":
		f.ProgressUpdateTimeout = opt(1, maxTimeout)
	case "--first_task_creation_timeout":
		f.FirstTaskTimeout = opt(1, maxTimeout)
	case "--resource_monitor_interval":
		f.ResourceMonitor = opt(0, -1)
	case "--copy_logs_to_parent":
		switch strings.ToLower(v) {
		case "true":
			f.CopyLogsToParent = true
		case "false":
			f.CopyLogsToParent = false
		default:
			p.errorf(pos, "write True or False", "%q must be True or False, found %q", flag, v)
		}
	case "--logging_level":
		f.LoggingLevel = p.loggingLevel(pos, flag, v)
	}
}
