package cli

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/porch-pipelines/porch/compiler"
	"github.com/porch-pipelines/porch/compiler/plan"
	"github.com/porch-pipelines/porch/internal/userfile"
)

// compilerLimits reads the compiler's limits from the environment: each
// PORCH_MAX_* variable that is set overrides its default.
func compilerLimits(getenv func(string) string) (compiler.Limits, error) {
	var l compiler.Limits
	for _, v := range []struct {
		name string
		set  func(int64)
	}{
		{compiler.EnvMaxFileBytes, func(n int64) { l.MaxFileBytes = n }},
		{compiler.EnvMaxTotalBytes, func(n int64) { l.MaxTotalBytes = n }},
		{compiler.EnvMaxSteps, func(n int64) { l.MaxSteps = int(n) }},
		{compiler.EnvMaxDepth, func(n int64) { l.MaxDepth = int(n) }},
		{compiler.EnvMaxInputs, func(n int64) { l.MaxInputs = int(n) }},
		{compiler.EnvMaxPlanInputs, func(n int64) { l.MaxPlanInputs = int(n) }},
		{compiler.EnvMaxAliasNodes, func(n int64) { l.MaxAliasNodes = int(n) }},
		{compiler.EnvMaxYAMLNodes, func(n int64) { l.MaxYAMLNodes = int(n) }},
	} {
		s := getenv(v.name)
		if s == "" {
			continue
		}
		n, err := strconv.ParseInt(s, 10, 32)
		if v.name == compiler.EnvMaxFileBytes || v.name == compiler.EnvMaxTotalBytes {
			n, err = strconv.ParseInt(s, 10, 64)
		}
		if err != nil || n < 1 {
			return l, usageError("%s=%q: expected a whole number of at least 1 (unset it for the default)", v.name, s)
		}
		v.set(n)
	}
	return l, nil
}

// userFiles reads the files a user names (catalogue and compute files, a
// run's pipeline for its memo) as the compiler does: regular files only,
// within PORCH_MAX_FILE_BYTES, stopping when ctx is done.
type userFiles struct {
	ctx    context.Context
	limits compiler.Limits
}

// userFiles returns the reader of files within the environment's limits.
func (a *app) userFiles(ctx context.Context) (userFiles, error) {
	l, err := compilerLimits(a.getenv)
	return userFiles{ctx: ctx, limits: l}, err
}

// read reads a file, its error saying what to do.
func (f userFiles) read(name string) ([]byte, error) {
	data, err := userfile.Read(f.ctx, name, f.limits.MaxFileBytes)
	var notRegular *userfile.NotRegularError
	var tooLarge *userfile.TooLargeError
	switch {
	case err == nil:
		return data, nil
	case errors.As(err, &notRegular):
		return nil, fmt.Errorf("%v: name a YAML file (porch reads regular files only)", err)
	case errors.As(err, &tooLarge):
		return nil, fmt.Errorf("%v: check that it is the file you meant, or raise the limit with %s=N", err, compiler.EnvMaxFileBytes)
	case f.ctx.Err() != nil:
		return nil, err
	}
	return nil, fmt.Errorf("read %s: %v", name, err)
}

// compileFile compiles path in a goroutine, so that a signal ends the
// command at once even while the compiler does what it cannot interrupt
// (decoding one large file); the compiler itself stops at its next look at
// ctx. It returns ctx's error when ctx is done first.
func compileFile(ctx context.Context, path string, opts compiler.Options) (*plan.Plan, compiler.Diagnostics, error) {
	type result struct {
		p     *plan.Plan
		diags compiler.Diagnostics
		panic any
	}
	done := make(chan result, 1)
	go func() {
		defer func() {
			if r := recover(); r != nil {
				done <- result{panic: r}
			}
		}()
		p, diags := compiler.CompileContext(ctx, path, opts)
		done <- result{p: p, diags: diags}
	}()
	select {
	case r := <-done:
		if r.panic != nil {
			// Run reports it as an internal error.
			panic(r.panic)
		}
		if err := ctx.Err(); err != nil {
			return nil, nil, err
		}
		return r.p, r.diags, nil
	case <-ctx.Done():
		return nil, nil, ctx.Err()
	}
}
