package stepio

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"
)

// lockPoll is how often a step waiting for another attempt's lock tries
// again.
const lockPoll = 100 * time.Millisecond

// LockStep takes the step's lock on this worker's home, waiting while
// another attempt of the step holds it: an attempt whose execution was
// abandoned (a reset, or a heartbeat timeout while its worker lived on)
// runs until its next heartbeat says so, then stops its processes, and
// until then it writes in the step's working and artifacts folders, which
// the new attempt is about to clear. The lock is the kernel's (flock): a
// worker that dies releases it. unlock releases it when the attempt ends.
// A step spread over workers takes one lock per instance.
func (h *Host) LockStep(ctx context.Context, in Step, instance int, spread bool) (unlock func(), err error) {
	if err := CheckName("run id", in.RunID); err != nil {
		return nil, err
	}
	if err := CheckName("step path", in.StepPath); err != nil {
		return nil, err
	}
	path := filepath.Join(h.Home, "work", in.RunID, filepath.FromSlash(in.StepPath))
	if spread && instance > 0 {
		path += ".instance-" + strconv.Itoa(instance)
	}
	path += ".lock"
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, FileError(fmt.Sprintf("step %q: create its working folder's parent", in.StepPath), err)
	}
	// The file stays: removing it would let two attempts lock two files.
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, FileError(fmt.Sprintf("step %q: open its lock %s", in.StepPath, path), err)
	}
	var stopBeats func()
	defer func() {
		if stopBeats != nil {
			stopBeats()
		}
	}()
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() { _ = f.Close() }, nil
		}
		if err != syscall.EWOULDBLOCK && err != syscall.EINTR {
			f.Close()
			return nil, FileError(fmt.Sprintf("step %q: lock %s", in.StepPath, path), err)
		}
		if stopBeats == nil {
			stopBeats = h.BeatWhile(ctx, func() any { return Beat{Phase: "waiting for an earlier attempt of the step to stop"} })
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, ctx.Err()
		case <-time.After(lockPoll):
		}
	}
}
