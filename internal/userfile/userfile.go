// Package userfile reads the files a user names (pipelines, components,
// catalogue and compute files) within bounds: regular files only, so that
// a device such as /dev/zero, a FIFO or a socket can neither feed porch
// forever nor block it, and no more than a size limit.
package userfile

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
)

// DefaultMaxBytes is the size limit of one file unless the caller sets
// another: 10 MiB, far above any pipeline or component file.
const DefaultMaxBytes int64 = 10 << 20

// chunk is how much Read reads between two looks at its context.
const chunk = 64 << 10

// NotRegularError reports a path that names something other than a regular
// file: a folder, a device, a named pipe or a socket.
type NotRegularError struct {
	Name string
	// Kind says what it is: "a folder", "a device", ...
	Kind string
}

func (e *NotRegularError) Error() string {
	return fmt.Sprintf("%s is %s, not a regular file", e.Name, e.Kind)
}

// TooLargeError reports a file above the size limit.
type TooLargeError struct {
	Name string
	// Size is the file's size, or -1 when it is only known to be above Max
	// (a file that grew while being read, or one that reports no size).
	Size int64
	Max  int64
}

func (e *TooLargeError) Error() string {
	if e.Size < 0 {
		return fmt.Sprintf("%s holds more than %d bytes, the limit", e.Name, e.Max)
	}
	return fmt.Sprintf("%s is %d bytes, more than the limit of %d", e.Name, e.Size, e.Max)
}

// Read returns the content of the regular file name, refusing anything
// else (NotRegularError) and files above max bytes (TooLargeError); max <=
// 0 means DefaultMaxBytes. It stops with ctx's error when ctx is done.
func Read(ctx context.Context, name string, max int64) ([]byte, error) {
	if max <= 0 {
		max = DefaultMaxBytes
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	// Checking before opening keeps a FIFO from blocking the open itself.
	info, err := os.Stat(name)
	var pe *fs.PathError
	if errors.As(err, &pe) {
		// Worded as os.ReadFile's: the file cannot be opened.
		pe.Op = "open"
	}
	if err != nil {
		return nil, err
	}
	if err := checkInfo(name, info, max); err != nil {
		return nil, err
	}
	// O_NONBLOCK: should the path become a FIFO between Stat and here, the
	// open returns at once, and the second check refuses it.
	f, err := os.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if info, err = f.Stat(); err != nil {
		return nil, err
	}
	if err := checkInfo(name, info, max); err != nil {
		return nil, err
	}
	return readBounded(ctx, name, f, info.Size(), max)
}

// checkInfo refuses what is not a regular file, or is above max bytes.
func checkInfo(name string, info fs.FileInfo, max int64) error {
	if kind := kindOf(info.Mode()); kind != "" {
		return &NotRegularError{Name: name, Kind: kind}
	}
	if info.Size() > max {
		return &TooLargeError{Name: name, Size: info.Size(), Max: max}
	}
	return nil
}

func kindOf(m fs.FileMode) string {
	switch {
	case m.IsRegular():
		return ""
	case m.IsDir():
		return "a folder"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe (FIFO)"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeDevice != 0:
		return "a device"
	}
	return "a special file"
}

// readBounded reads r to its end, at most max bytes, looking at ctx
// between chunks. size is what the file says it holds: files under /proc
// say 0 and hold more, so it is a hint for the buffer only.
func readBounded(ctx context.Context, name string, r io.Reader, size, max int64) ([]byte, error) {
	buf := make([]byte, 0, min(size, max)+1)
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if int64(len(buf)) > max {
			return nil, &TooLargeError{Name: name, Size: -1, Max: max}
		}
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := r.Read(buf[len(buf):min(cap(buf), len(buf)+chunk)])
		buf = buf[:len(buf)+n]
		if errors.Is(err, io.EOF) {
			if int64(len(buf)) > max {
				return nil, &TooLargeError{Name: name, Size: -1, Max: max}
			}
			return buf, nil
		}
		if err != nil {
			return nil, err
		}
	}
}
