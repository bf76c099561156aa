package devserver

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
)

const (
	// readyTimeout bounds the wait for the frontend when ctx has no deadline.
	readyTimeout = 30 * time.Second
	// readyPoll is the interval between readiness probes: short, because a
	// start takes a few hundred milliseconds.
	readyPoll = 10 * time.Millisecond
)

// ready waits until the frontend serves the namespace, registers the search
// attributes it lacks and waits until a visibility query accepts them all.
// It asks through the local address, the internal frontend when the
// frontend has TLS, and then waits for the frontend to listen.
func (s *Server) ready(ctx context.Context, opts Options) error {
	api := s.local
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, readyTimeout)
		defer cancel()
	}
	conn, err := grpc.NewClient(api, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return fmt.Errorf("connect to frontend %s: %w", api, err)
	}
	defer conn.Close()
	wf := workflowservice.NewWorkflowServiceClient(conn)
	op := operatorservice.NewOperatorServiceClient(conn)

	err = poll(ctx, func() error {
		_, err := wf.DescribeNamespace(ctx, &workflowservice.DescribeNamespaceRequest{Namespace: opts.Namespace})
		return err
	})
	if err != nil {
		return fmt.Errorf("frontend %s not ready: %w", api, err)
	}
	if api != s.frontend {
		if err := waitListening(ctx, s.frontend, nil); err != nil {
			return fmt.Errorf("frontend: %w", err)
		}
	}
	if len(opts.SearchAttributes) == 0 {
		return nil
	}
	if err := addSearchAttributes(ctx, op, opts.Namespace, opts.SearchAttributes); err != nil {
		return err
	}
	// The frontend resolves attribute names through a namespace cache that
	// refreshes every few seconds; the query fails until it knows them all.
	query := searchAttributesQuery(opts.SearchAttributes)
	err = poll(ctx, func() error {
		_, err := wf.CountWorkflowExecutions(ctx, &workflowservice.CountWorkflowExecutionsRequest{
			Namespace: opts.Namespace, Query: query,
		})
		return err
	})
	if err != nil {
		return fmt.Errorf("search attributes not queryable: %w", err)
	}
	return nil
}

// addSearchAttributes registers the attributes the namespace lacks. A new
// namespace already has them all; one from an older database file may not.
func addSearchAttributes(ctx context.Context, op operatorservice.OperatorServiceClient, ns string, want map[string]enumspb.IndexedValueType) error {
	resp, err := op.ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{Namespace: ns})
	if err != nil {
		return fmt.Errorf("list search attributes: %w", err)
	}
	have := resp.GetCustomAttributes()
	missing := map[string]enumspb.IndexedValueType{}
	for _, name := range slices.Sorted(maps.Keys(want)) {
		got, ok := have[name]
		switch {
		case !ok:
			missing[name] = want[name]
		case got != want[name]:
			return fmt.Errorf("search attribute %q is registered as %s, want %s", name, got, want[name])
		}
	}
	if len(missing) == 0 {
		return nil
	}
	_, err = op.AddSearchAttributes(ctx, &operatorservice.AddSearchAttributesRequest{
		Namespace: ns, SearchAttributes: missing,
	})
	if err != nil {
		return fmt.Errorf("add search attributes: %w", err)
	}
	return nil
}

// searchAttributesQuery names every attribute once, in a stable order.
func searchAttributesQuery(attrs map[string]enumspb.IndexedValueType) string {
	names := slices.Sorted(maps.Keys(attrs))
	for i, n := range names {
		names[i] = n + " IS NULL"
	}
	return strings.Join(names, " OR ")
}

// poll calls probe until it succeeds, fails with an error that waiting will
// not cure, or ctx ends.
func poll(ctx context.Context, probe func() error) error {
	tick := time.NewTicker(readyPoll)
	defer tick.Stop()
	for {
		err := probe()
		if err == nil || !transient(err) {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (last error: %v)", ctx.Err(), err)
		case <-tick.C:
		}
	}
}

// transient reports errors a starting server returns before it is ready.
func transient(err error) bool {
	switch serviceerror.FromStatus(status.Convert(err)).(type) {
	case *serviceerror.Unavailable, *serviceerror.NamespaceNotFound,
		*serviceerror.InvalidArgument, *serviceerror.DeadlineExceeded,
		*serviceerror.ResourceExhausted, *serviceerror.Internal:
		return true
	}
	return false
}
