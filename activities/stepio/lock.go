package stepio

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"golang.org/x/sys/unix"
)

// lockPoll is how often a step waiting for another attempt's lock tries
// again.
const lockPoll = 100 * time.Millisecond

// LockStep takes the step's lock on this worker's home, waiting while
// another attempt of the step holds it: an attempt whose execution was
// abandoned (a reset, or a heartbeat timeout while its worker lived on)
// runs until its next heartbeat says so, then stops its processes, and
// until then it writes in the step's working and artifacts folders, which
// the new attempt is about to clear. The lock is the kernel's: a worker
// that dies releases it. unlock releases it when the attempt ends. A step
// spread over workers takes one lock per instance.
//
// The steps of a run lock bytes of one file, work/<run>/.porch-locks, at
// an offset hashed from the step's path and instance (open file
// description locks, which belong to the open file, not to the process):
// a lock file created for each step cost the step 0.05 to over 1 ms of
// CPU on the ext4 porch is measured on, opening one that exists 0.01.
func (h *Host) LockStep(ctx context.Context, in Step, instance int, spread bool) (unlock func(), err error) {
	if err := CheckName("run id", in.RunID); err != nil {
		return nil, err
	}
	if err := CheckName("step path", in.StepPath); err != nil {
		return nil, err
	}
	key := in.StepPath
	if spread && instance > 0 {
		key += ".instance-" + strconv.Itoa(instance)
	}
	path := filepath.Join(h.Home, "work", in.RunID, locksFile)
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if errors.Is(err, fs.ErrNotExist) {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return nil, FileError(fmt.Sprintf("step %q: create its run's working folder", in.StepPath), err)
		}
		f, err = os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	}
	if err != nil {
		return nil, FileError(fmt.Sprintf("step %q: open its run's locks %s", in.StepPath, path), err)
	}
	lk := unix.Flock_t{Type: unix.F_WRLCK, Whence: io.SeekStart, Start: lockOffset(key), Len: 1}
	var stopBeats func()
	defer func() {
		if stopBeats != nil {
			stopBeats()
		}
	}()
	for {
		err := unix.FcntlFlock(f.Fd(), unix.F_OFD_SETLK, &lk)
		if err == nil {
			return func() { _ = f.Close() }, nil
		}
		if err != unix.EAGAIN && err != unix.EACCES && err != unix.EINTR {
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

// locksFile is the file in a run's working folder whose bytes are its
// steps' locks.
const locksFile = ".porch-locks"

// lockOffset is the byte of the locks file that is step key's lock: a
// 62-bit hash, so two of a run's 10,000 steps share a byte with a chance
// of about one in 10^11 (and then only wait for each other).
func lockOffset(key string) int64 {
	h := fnv.New64a()
	h.Write([]byte(key))
	return int64(h.Sum64() >> 2)
}
