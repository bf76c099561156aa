package command

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// running starts a stand-in for a moved command: it runs until stopped,
// and ends with the cause it was stopped for.
func running(m *movedCommands) *hereRun {
	ctx, stop := context.WithCancelCause(context.Background())
	h := &hereRun{done: make(chan struct{}), stop: stop}
	m.started(h)
	go func() {
		defer close(h.done)
		defer m.ended(h)
		<-ctx.Done()
		h.err = context.Cause(ctx)
	}()
	return h
}

func TestAMovedCommandNoActivityFollowsIsStopped(t *testing.T) {
	var m movedCommands
	h := running(&m)
	m.put("run/step/1", h, 50*time.Millisecond, nil)
	select {
	case <-h.done:
	case <-time.After(10 * time.Second):
		t.Fatal("a command nobody followed runs on")
	}
	assert.ErrorIs(t, h.err, errNotFollowed)
	assert.Nil(t, m.take("run/step/1"), "a stopped command is not handed out")
}

func TestAMovedCommandIsFollowedOnceAndNotStoppedForWaiting(t *testing.T) {
	var m movedCommands
	h := running(&m)
	m.put("run/step/1", h, 50*time.Millisecond, nil)
	require.Same(t, h, m.take("run/step/1"))
	assert.Nil(t, m.take("run/step/1"), "a second follower gets nothing")
	time.Sleep(200 * time.Millisecond)
	select {
	case <-h.done:
		t.Fatal("a followed command was stopped for want of a follower")
	default:
	}
	h.stop(nil)
	<-h.done
}

func TestStopMovedStopsFollowedAndWaitingCommands(t *testing.T) {
	a := &Activities{}
	followed, waiting := running(&a.moved), running(&a.moved)
	a.moved.put("run/a/1", followed, time.Hour, nil)
	a.moved.put("run/b/1", waiting, time.Hour, nil)
	require.NotNil(t, a.moved.take("run/a/1"))
	a.StopMoved()
	for _, h := range []*hereRun{followed, waiting} {
		select {
		case <-h.done:
			assert.ErrorIs(t, h.err, errWorkerStopped)
		default:
			t.Fatal("StopMoved returned before a moved command ended")
		}
	}
}

func TestAMovedCommandWhoseWorkflowClosedIsStopped(t *testing.T) {
	var m movedCommands
	h := running(&m)
	closed := make(chan struct{})
	m.put("run/step/1", h, time.Hour, func() bool {
		select {
		case <-closed:
			return true
		default:
			return false
		}
	})
	time.Sleep(2 * followCheck)
	select {
	case <-h.done:
		t.Fatal("a command whose workflow runs was stopped")
	default:
	}
	close(closed)
	select {
	case <-h.done:
	case <-time.After(10 * time.Second):
		t.Fatal("a command whose workflow closed runs on")
	}
	assert.ErrorIs(t, h.err, errWorkflowClosed)
}

func TestACommandThatEndedJustAfterItMovedIsStillFollowed(t *testing.T) {
	var m movedCommands
	h := running(&m)
	m.put("run/step/1", h, time.Hour, nil)
	h.stop(nil)
	<-h.done
	time.Sleep(2 * followCheck)
	assert.Same(t, h, m.take("run/step/1"), "its follower gets its result, not CommandLost")
}
