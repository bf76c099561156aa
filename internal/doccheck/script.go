package doccheck

import (
	"fmt"
	"regexp"
	"strings"
)

// The ports the examples name: porch dev's defaults, which the script
// replaces by the free ports $DOC_PORT and $DOC_UI_PORT it runs porch dev on
// (other tests, and other people's porch dev, may hold the defaults).
const (
	defaultPort   = "127.0.0.1:7233"
	defaultUIPort = "127.0.0.1:8233"
)

// Command is one command line of a run block, with the output the block
// shows for it.
type Command struct {
	Line   string
	Output []string
}

// Commands splits a run block into its command lines. In a block with
// "$ " prompts only the prompted lines are commands, and the lines below
// each its output; otherwise every line is a command but comments and
// blank lines. A line ending in a backslash goes on on the next.
func Commands(block string) []Command {
	lines := strings.Split(strings.TrimRight(block, "\n"), "\n")
	prompted := prompted(block)
	var cmds []Command
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		if prompted && !strings.HasPrefix(l, "$ ") {
			if len(cmds) > 0 {
				cmds[len(cmds)-1].Output = append(cmds[len(cmds)-1].Output, l)
			}
			continue
		}
		l = strings.TrimPrefix(l, "$ ")
		for strings.HasSuffix(l, `\`) && i+1 < len(lines) {
			i++
			l = strings.TrimRight(strings.TrimSuffix(l, `\`), " ") + " " + strings.TrimSpace(lines[i])
		}
		if t := strings.TrimSpace(l); t == "" || strings.HasPrefix(t, "#") {
			continue
		}
		cmds = append(cmds, Command{Line: strings.TrimSpace(l)})
	}
	return cmds
}

// commandLike matches a line that runs porch or the temporal CLI, after
// any variable assignments: a block holding one must be marked.
var commandLike = regexp.MustCompile(`^(\$ )?([A-Za-z_][A-Za-z0-9_]*=\S* )*(temporal [a-z-]+|porch (` + porchCommands + `)\b)`)

// porchCommands are porch's commands (and those coming), so that output
// such as "porch runs pipeline jobs" is not taken for a command.
const porchCommands = "run|validate|compile|job|dev|worker|ui|replay|version|help|datastore|data|model|component|compute|instance-type|quota|environment|schedule"

// RunsCommands says whether a block holds a porch or temporal command line
// (and not only their output, such as "porch: ..." messages).
func RunsCommands(block string) bool {
	for _, l := range strings.Split(block, "\n") {
		if commandLike.MatchString(strings.TrimSpace(l)) {
			return true
		}
	}
	return false
}

// Script turns a page's markers into a testscript (txtar) that runs its
// examples in order, as a reader following the page types them. It returns
// "" when the page has nothing to run.
//
// Each command runs through sh, as a reader's shell runs it. `porch dev &`
// starts porch dev in the background on free ports ($DOC_PORT,
// $DOC_UI_PORT, which stand for 7233 and 8233 wherever an example names
// them) and waits until it has recorded itself; the script stops it at the
// end. The temporal CLI is pointed at it with TEMPORAL_ADDRESS.
func Script(p *Page) (string, error) {
	var sb, files strings.Builder
	ran := false
	var devs []string // the condition each background porch dev runs under
	for _, st := range p.Steps {
		m := st.Marker
		fmt.Fprintf(&sb, "# %s:%d: doctest %s %s\n", p.Path, m.Line, m.Kind, strings.Join(m.Args, " "))
		switch m.Kind {
		case "skip":
			continue
		case "file":
			fmt.Fprintf(&files, "-- %s --\n%s", m.Args[0], st.Block.Text)
			if !strings.HasSuffix(st.Block.Text, "\n") {
				files.WriteString("\n")
			}
			continue
		case "run":
			var err error
			if devs, err = runBlock(&sb, &files, p.Path, m, st.Block, devs); err != nil {
				return "", err
			}
		}
		for _, l := range m.Body {
			sb.WriteString(ports(l) + "\n")
		}
		ran = true
	}
	if !ran {
		return "", nil
	}
	for i, cond := range devs {
		fmt.Fprintf(&sb, "%skill -INT dev%d\n%swait dev%d\n", cond, i+1, cond, i+1)
	}
	sb.WriteString("\n")
	sb.WriteString(files.String())
	return sb.String(), nil
}

// runBlock writes the commands of a run block, and the shell scripts they
// run to files; it returns devs with the condition of each porch dev it
// started in the background added.
func runBlock(sb, files *strings.Builder, path string, m Marker, b *Block, devs []string) ([]string, error) {
	var fails, output bool
	var cond string
	for _, a := range m.Args {
		switch {
		case a == "fails":
			fails = true
		case a == "output":
			output = true
		case strings.HasPrefix(a, "[") && strings.HasSuffix(a, "]"):
			cond = a + " "
		default:
			return nil, fmt.Errorf("%s:%d: doctest run takes fails, output and [condition], not %q", path, m.Line, a)
		}
	}
	cmds := Commands(b.Text)
	if len(cmds) == 0 {
		return nil, fmt.Errorf("%s:%d: the block marked doctest run holds no command", path, b.Line)
	}
	if !prompted(b.Text) {
		if output {
			return nil, fmt.Errorf("%s:%d: doctest run output needs \"$ \" before each command, to tell commands from output", path, m.Line)
		}
		return shellBlock(sb, files, path, cond, fails, b, devs)
	}
	for i, c := range cmds {
		if strings.HasSuffix(c.Line, "&") {
			return nil, fmt.Errorf("%s:%d: start porch dev in a block without \"$ \" prompts", path, b.Line)
		}
		line := temporalFunc + ports(c.Line)
		if output {
			line = "( " + line + " ) 2>&1"
		}
		bang := ""
		if fails && i == len(cmds)-1 {
			bang = "! "
		}
		fmt.Fprintf(sb, "%s%sexec sh -c %s\n", cond, bang, quote(line))
		if output {
			for _, o := range c.Output {
				if re := outputPattern(o); re != "" {
					fmt.Fprintf(sb, "%sstdout %s\n", cond, quote(re))
				}
			}
		}
	}
	return devs, nil
}

// temporalFunc points the temporal CLI at the page's porch dev, as its
// default address points at a porch dev on the default port.
const temporalFunc = `temporal() { TEMPORAL_ADDRESS="${DEV_ADDRESS:-127.0.0.1:7233}" command temporal "$@"; }; `

// shellBlock runs a block without prompts as a reader's shell would run it
// pasted: each part between `porch dev &` lines one sh script, stopping at
// the first command that fails (with fails, the block must fail).
func shellBlock(sb, files *strings.Builder, path, cond string, fails bool, b *Block, devs []string) ([]string, error) {
	var part []string
	n := 0
	flush := func() {
		if len(part) == 0 {
			return
		}
		n++
		name := fmt.Sprintf("doctest/%d-%d.sh", b.Line, n)
		fmt.Fprintf(files, "-- %s --\nset -e\n%s\n%s\n", name, temporalFunc, strings.Join(part, "\n"))
		bang := ""
		if fails {
			bang = "! "
		}
		fmt.Fprintf(sb, "%s%sexec sh -x %s\n", cond, bang, name)
		part = nil
	}
	for _, l := range strings.Split(strings.TrimRight(b.Text, "\n"), "\n") {
		t := strings.TrimSpace(l)
		if bg, ok := strings.CutSuffix(t, "&"); ok && !strings.HasSuffix(bg, "&") {
			bg = strings.TrimSpace(bg)
			if !strings.HasPrefix(bg, "porch dev") {
				return nil, fmt.Errorf("%s:%d: only porch dev may run in the background in a doctest, not %q: mark the block skip", path, b.Line, t)
			}
			flush()
			devs = append(devs, cond)
			if !strings.Contains(bg, "--port") {
				bg += " --port $DOC_PORT --ui-port $DOC_UI_PORT"
			}
			fmt.Fprintf(sb, "%sexec %s &dev%d&\n%sdevaddr\n", cond, bg, len(devs), cond)
			continue
		}
		part = append(part, ports(l))
	}
	flush()
	return devs, nil
}

func prompted(block string) bool {
	for _, l := range strings.Split(block, "\n") {
		if strings.HasPrefix(l, "$ ") {
			return true
		}
	}
	return false
}

// ports names porch dev's free ports where an example names the defaults.
func ports(s string) string {
	s = strings.ReplaceAll(s, defaultPort, "127.0.0.1:$DOC_PORT")
	return strings.ReplaceAll(s, defaultUIPort, "127.0.0.1:$DOC_UI_PORT")
}

// outputPattern is a regular expression for one line of shown output:
// "..." stands for anything, a run of spaces for any run of spaces; a line
// of "..." alone checks nothing.
func outputPattern(line string) string {
	t := strings.TrimSpace(line)
	if t == "" || t == "..." {
		return ""
	}
	var parts []string
	for _, piece := range strings.Split(t, "...") {
		var words []string
		for _, w := range strings.Fields(piece) {
			words = append(words, regexp.QuoteMeta(w))
		}
		p := strings.Join(words, `\s+`)
		if strings.HasPrefix(piece, " ") && p != "" {
			p = `\s+` + p
		}
		if strings.HasSuffix(piece, " ") && p != "" {
			p += `\s+`
		}
		parts = append(parts, p)
	}
	return `(?m)^\s*` + strings.Join(parts, ".*") + `\s*$`
}

// quote makes a testscript word of s: single quotes keep it whole and
// leave $ to the shell.
func quote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", "''") + "'"
}
