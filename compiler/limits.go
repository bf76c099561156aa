package compiler

import (
	"github.com/porch-pipelines/porch/compiler/plan"
	"github.com/porch-pipelines/porch/internal/userfile"
)

// Limits bound what one compilation reads, so that no input, however
// hostile, makes porch run out of memory or time. A field of zero (or
// less) takes its value in DefaultLimits.
//
// The porch command reads them from the environment variables named in
// their comments; the messages of a limit reached name the variable.
type Limits struct {
	// MaxFileBytes bounds the size of each file read (PORCH_MAX_FILE_BYTES).
	MaxFileBytes int64
}

// DefaultLimits are generous for real pipelines, whose files are a few
// KiB.
var DefaultLimits = Limits{
	MaxFileBytes: userfile.DefaultMaxBytes,
}

// The environment variables the porch command reads Limits from.
const (
	EnvMaxFileBytes = "PORCH_MAX_FILE_BYTES"
)

// withDefaults fills the fields left at zero.
func (l Limits) withDefaults() Limits {
	d := DefaultLimits
	if l.MaxFileBytes <= 0 {
		l.MaxFileBytes = d.MaxFileBytes
	}
	return l
}

// raise is the detail of a limit's message: what to do, and how to raise
// the limit for a pipeline meant to be that large.
func raise(what, env string) string {
	return what + ", or raise the limit with " + env + "=N if the pipeline is meant to be this large"
}

// halt reports what stops the compilation: the phases check halted and
// return. Only the first is reported.
func (p *parser) halt(pos plan.Pos, detail, format string, args ...any) {
	if p.halted {
		return
	}
	p.halted = true
	p.errorf(pos, detail, format, args...)
}

// stopped reports whether the compilation must stop: a limit was reached,
// or its context is done (reported once, at the root file).
func (p *parser) stopped() bool {
	if p.halted {
		return true
	}
	if err := p.ctx.Err(); err != nil {
		p.halt(plan.Pos{File: p.root}, "", "compilation stopped: %v", err)
		return true
	}
	return false
}
