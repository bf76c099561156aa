package cli

import (
	"context"
	"strings"
	"time"

	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/sdk/client"

	"github.com/porch-pipelines/porch/workflows"
)

// attributesWait bounds how long a submission waits for a server to take
// porch's search attributes it has registered: its services learn of
// them on their namespace cache's next refresh (every 2 s by default).
const attributesWait = 30 * time.Second

// startWhenAttributesTaken runs start, and runs it again while the server
// refuses porch's search attributes although it lists them: they were
// registered a moment ago (as a setup script does just before its first
// run) and its services have not refreshed their namespace cache yet.
// Any other error, and attributes that are not registered, return at once.
func startWhenAttributesTaken(ctx context.Context, c client.Client, namespace string, start func() (client.WorkflowRun, error)) (client.WorkflowRun, error) {
	run, err := start()
	deadline := time.Now().Add(attributesWait)
	for err != nil && time.Now().Before(deadline) && attributesPending(ctx, c, namespace, err) {
		select {
		case <-ctx.Done():
			return nil, err
		case <-time.After(500 * time.Millisecond): // the server's cache refresh: nothing to wait on
		}
		run, err = start()
	}
	return run, err
}

// attributesPending says whether err refuses one of porch's search
// attributes that the server lists as registered in namespace.
func attributesPending(ctx context.Context, c client.Client, namespace string, err error) bool {
	if !strings.Contains(err.Error(), "no mapping defined for search attribute") {
		return false
	}
	resp, lerr := c.OperatorService().ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{Namespace: namespace})
	if lerr != nil {
		return false
	}
	for name := range workflows.SearchAttributes() {
		if _, ok := resp.GetCustomAttributes()[name]; !ok {
			return false
		}
	}
	return true
}
