package activities

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
)

func (a *Activities) heartbeatInterval() time.Duration {
	if a.HeartbeatInterval > 0 {
		return a.HeartbeatInterval
	}
	return 5 * time.Second
}

func (a *Activities) killGrace() time.Duration {
	if a.KillGrace > 0 {
		return a.KillGrace
	}
	return 5 * time.Second
}

// invalidStep is a user's mistake: never retried, the message says what to
// fix.
func invalidStep(format string, args ...any) error {
	return temporal.NewNonRetryableApplicationError(fmt.Sprintf(format, args...), InvalidStepType, nil)
}

// beatWhile records a heartbeat with details() every heartbeat interval
// until the returned function is called.
func (a *Activities) beatWhile(ctx context.Context, details func() any) (stop func()) {
	if !activity.IsActivity(ctx) {
		return func() {}
	}
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		tick := time.NewTicker(a.heartbeatInterval())
		defer tick.Stop()
		for {
			select {
			case <-tick.C:
				activity.RecordHeartbeat(ctx, details())
			case <-done:
				return
			}
		}
	}()
	return func() {
		close(done)
		<-finished
	}
}

// NodeName names this worker in parallel steps' logs and in its own task
// queue: the host name and the process id, unless Activities.Node says
// otherwise.
func (a *Activities) NodeName() string {
	if a.Node != "" {
		return a.Node
	}
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "node"
	}
	return host + "-" + strconv.Itoa(os.Getpid())
}

// InvalidStepType is the application error type of a step that cannot run as
// written (a missing input, a bad path, an unknown distribution): a user's
// mistake, never retried. The message says what to fix.
const InvalidStepType = "InvalidStep"

// OutputLocation says where an output landed.
type OutputLocation struct {
	Name string `json:"name"`
	URI  string `json:"uri"`
	Path string `json:"path"`
}
