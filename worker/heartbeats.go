package worker

import (
	"context"
	"errors"
	"sync"
	"time"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/interceptor"
	"go.temporal.io/sdk/temporal"
)

// heartbeatRPCTimeout bounds one heartbeat's call to the server. A call
// that times out is tried again at the next beat: only the heartbeat
// timeout, which the server enforces, ends an activity that cannot reach
// it.
const heartbeatRPCTimeout = 10 * time.Second

// steadyHeartbeats sends the heartbeats of porch's activities itself, at
// most one a beat interval, so that a server that stalls (a restart, a GC
// pause, a slow database, `kill -STOP`) for less than the heartbeat
// timeout costs nothing.
//
// The SDK's own heartbeats give each call the throttle interval (a second
// here) and, when a call fails with an error worth retrying, cancel the
// activity's context, so every running command, mini-batch and trial was
// stopped and started again from scratch by a stall of 1.5 s. Here a
// failed call is logged and the beat goes on; the server's answers that
// do end an activity (cancel requested, reset, paused, the activity or
// its workflow gone) are handed to the SDK, whose next heartbeat hears the
// same answer and cancels the context with its reason, as before.
type steadyHeartbeats struct {
	interceptor.WorkerInterceptorBase
	client   client.Client
	interval time.Duration
}

func (s *steadyHeartbeats) InterceptActivity(ctx context.Context, next interceptor.ActivityInboundInterceptor) interceptor.ActivityInboundInterceptor {
	return &heartbeatInbound{ActivityInboundInterceptorBase: interceptor.ActivityInboundInterceptorBase{Next: next},
		beats: &beater{client: s.client, interval: s.interval}}
}

type heartbeatInbound struct {
	interceptor.ActivityInboundInterceptorBase
	beats *beater
}

func (i *heartbeatInbound) Init(outbound interceptor.ActivityOutboundInterceptor) error {
	i.beats.sdk = outbound
	return i.Next.Init(&heartbeatOutbound{ActivityOutboundInterceptorBase: interceptor.ActivityOutboundInterceptorBase{Next: outbound}, beats: i.beats})
}

func (i *heartbeatInbound) ExecuteActivity(ctx context.Context, in *interceptor.ExecuteActivityInput) (any, error) {
	info := activity.GetInfo(ctx)
	if info.IsLocalActivity || len(info.TaskToken) == 0 || i.beats.client == nil {
		return i.Next.ExecuteActivity(ctx, in)
	}
	stop := i.beats.start(ctx, info.TaskToken)
	defer stop()
	return i.Next.ExecuteActivity(ctx, in)
}

type heartbeatOutbound struct {
	interceptor.ActivityOutboundInterceptorBase
	beats *beater
}

func (o *heartbeatOutbound) RecordHeartbeat(ctx context.Context, details ...any) {
	if !o.beats.take(details) {
		o.Next.RecordHeartbeat(ctx, details...)
	}
}

// beater sends one activity's heartbeats: the latest details recorded
// since the last call, at most one call a beat interval.
type beater struct {
	client   client.Client
	interval time.Duration
	// sdk is the SDK's outbound interceptor, whose RecordHeartbeat
	// makes the SDK hear an answer that ends the activity.
	sdk interceptor.ActivityOutboundInterceptor

	mu      sync.Mutex
	running bool
	pending []any
	has     bool
	wake    chan struct{}
}

// start starts beating for the activity of ctx; stop ends it.
func (b *beater) start(ctx context.Context, token []byte) (stop func()) {
	b.mu.Lock()
	b.running, b.wake = true, make(chan struct{}, 1)
	b.mu.Unlock()
	done, finished := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(finished)
		b.loop(ctx, token, done)
	}()
	return func() {
		close(done)
		<-finished
	}
}

// take keeps details for the next call; false when this beater does not
// send the activity's heartbeats (a local activity, or after it handed
// them to the SDK).
func (b *beater) take(details []any) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.running {
		return false
	}
	b.pending, b.has = details, true
	select {
	case b.wake <- struct{}{}:
	default:
	}
	return true
}

// next returns the details to send, if any were recorded.
func (b *beater) next() ([]any, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	d, ok := b.pending, b.has
	b.pending, b.has = nil, false
	return d, ok
}

// retry keeps details for the next call, unless newer ones came.
func (b *beater) retry(details []any) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.has {
		b.pending, b.has = details, true
	}
	select {
	case b.wake <- struct{}{}:
	default:
	}
}

func (b *beater) stopRunning() {
	b.mu.Lock()
	b.running = false
	b.mu.Unlock()
}

func (b *beater) loop(ctx context.Context, token []byte, done <-chan struct{}) {
	defer b.stopRunning()
	var failingSince time.Time
	for {
		select {
		case <-b.wake:
		case <-done:
			return
		}
		details, ok := b.next()
		if !ok {
			continue
		}
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), heartbeatRPCTimeout)
		err := b.client.RecordActivityHeartbeat(rctx, token, details...)
		cancel()
		switch {
		case err == nil:
			if !failingSince.IsZero() {
				activity.GetLogger(ctx).Info("porch: heartbeats reach the server again; the activity went on", "unreachable", time.Since(failingSince).Round(time.Millisecond))
				failingSince = time.Time{}
			}
		case endsActivity(err):
			// The SDK hears the same answer and cancels the activity's
			// context with its reason; its heartbeats take over.
			b.stopRunning()
			b.sdk.RecordHeartbeat(ctx, details...)
			return
		default:
			if failingSince.IsZero() {
				failingSince = time.Now()
				activity.GetLogger(ctx).Warn("porch: a heartbeat did not reach the server; the activity goes on and the next beat tries again", "error", err)
			}
			b.retry(details)
		}
		t := time.NewTimer(b.interval)
		select {
		case <-t.C:
		case <-done:
			t.Stop()
			return
		}
	}
}

// endsActivity says whether a heartbeat's answer ends the activity, as
// the SDK reads it: a cancel, a reset or a pause asked for, or the
// activity, its workflow or its namespace gone.
func endsActivity(err error) bool {
	var notFound *serviceerror.NotFound
	var nsInactive *serviceerror.NamespaceNotActive
	var nsNotFound *serviceerror.NamespaceNotFound
	return temporal.IsCanceledError(err) || errors.Is(err, activity.ErrActivityPaused) || errors.Is(err, activity.ErrActivityReset) ||
		errors.As(err, &notFound) || errors.As(err, &nsInactive) || errors.As(err, &nsNotFound)
}
