package worker

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sync"
	"time"

	"go.temporal.io/sdk/interceptor"

	"github.com/porch-pipelines/porch/activities/atomicfile"
)

// NodeStatus is what a worker started with Options.StatusFile says about
// itself: how many activities it runs now and since when it has run none.
// A local fleet (porch dev) reads it to stop only idle nodes.
type NodeStatus struct {
	Node string `json:"node"`
	PID  int    `json:"pid"`
	// Running is the number of activities (steps, mini-batches) running.
	Running int `json:"running"`
	// IdleSince is when the last activity ended, or when the worker
	// started; zero while Running is above zero.
	IdleSince time.Time `json:"idle_since,omitzero"`
}

// ReadNodeStatus reads a status file a worker writes.
func ReadNodeStatus(path string) (NodeStatus, error) {
	var st NodeStatus
	data, err := os.ReadFile(path)
	if err != nil {
		return st, err
	}
	if err := json.Unmarshal(data, &st); err != nil {
		return st, fmt.Errorf("%s: %v", path, err)
	}
	return st, nil
}

// statusWriter counts a worker's running activities, across all its task
// queues, and rewrites the status file whenever the count changes. The
// file is replaced whole (atomicfile), so a reader never sees half of it.
type statusWriter struct {
	mu     sync.Mutex
	path   string
	status NodeStatus
}

func newStatusWriter(path, node string) (*statusWriter, error) {
	s := &statusWriter{path: path, status: NodeStatus{Node: node, PID: os.Getpid(), IdleSince: time.Now().UTC()}}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.write(); err != nil {
		return nil, fmt.Errorf("write the worker's status file: %v: give --status-file a writable path", err)
	}
	return s, nil
}

// add changes the running count by delta and writes the file.
func (s *statusWriter) add(delta int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.status.Running += delta
	s.status.IdleSince = time.Time{}
	if s.status.Running == 0 {
		s.status.IdleSince = time.Now().UTC()
	}
	if err := s.write(); err != nil {
		// A stale file could say idle while a step runs: without one, a
		// fleet knows nothing and stops nothing.
		os.Remove(s.path)
	}
}

func (s *statusWriter) write() error {
	data, err := json.Marshal(s.status)
	if err != nil {
		return err
	}
	return atomicfile.Write(s.path, append(data, '\n'))
}

// interceptor counts the activities of every SDK worker it is given to.
func (s *statusWriter) interceptor() interceptor.WorkerInterceptor {
	return &statusInterceptor{status: s}
}

type statusInterceptor struct {
	interceptor.WorkerInterceptorBase
	status *statusWriter
}

func (i *statusInterceptor) InterceptActivity(ctx context.Context, next interceptor.ActivityInboundInterceptor) interceptor.ActivityInboundInterceptor {
	return &statusActivity{ActivityInboundInterceptorBase: interceptor.ActivityInboundInterceptorBase{Next: next}, status: i.status}
}

type statusActivity struct {
	interceptor.ActivityInboundInterceptorBase
	status *statusWriter
}

// ExecuteActivity counts the activity as running until it returns.
func (a *statusActivity) ExecuteActivity(ctx context.Context, in *interceptor.ExecuteActivityInput) (any, error) {
	a.status.add(1)
	defer a.status.add(-1)
	return a.Next.ExecuteActivity(ctx, in)
}
