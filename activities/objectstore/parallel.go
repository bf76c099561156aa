package objectstore

import (
	"context"

	"golang.org/x/sync/errgroup"
)

// transferWidth is how many objects a folder's upload, download or removal
// moves at once. Each object is one or a few requests whose time is mostly
// the service's latency, not bandwidth: one at a time, a folder of small
// files moves at a fraction of what the link and the service take (see
// BenchmarkAzureFolder).
const transferWidth = 8

// transfers runs object transfers transferWidth at a time; the first
// failure cancels the others and is the one wait returns.
type transfers struct {
	g           *errgroup.Group
	parent, ctx context.Context
}

func newTransfers(parent context.Context) *transfers {
	g, ctx := errgroup.WithContext(parent)
	g.SetLimit(transferWidth)
	return &transfers{g: g, parent: parent, ctx: ctx}
}

// start runs fn once a slot is free, and reports false, without running
// it, once a transfer has failed.
func (t *transfers) start(fn func(ctx context.Context) error) bool {
	if t.ctx.Err() != nil {
		return false
	}
	t.g.Go(func() error { return fn(t.ctx) })
	return true
}

// wait waits for every started transfer and returns the first failure, or
// the caller's context's error when it ended before all were started.
func (t *transfers) wait() error {
	if err := t.g.Wait(); err != nil {
		return err
	}
	return t.parent.Err()
}
