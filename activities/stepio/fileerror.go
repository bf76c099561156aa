package stepio

import (
	"errors"
	"fmt"
	"syscall"
)

// FileError is a failure to write what (a step's output or folder, named
// by the caller with its path) that says what to do. A read-only or
// forbidden folder cannot succeed on a retry: it is a non-retryable
// Invalid. A full disk may be freed: it stays retryable, saying so.
func FileError(what string, err error) error {
	switch {
	case errors.Is(err, syscall.EROFS), errors.Is(err, syscall.EACCES), errors.Is(err, syscall.EPERM):
		return Invalid("%s: %v: the worker cannot write there; make the datastore's folder writable for the worker's user "+
			"(a datastore's folder is under $PORCH_HOME/datastores/<name>, or the path it was registered with), or write the output to another datastore", what, err)
	case errors.Is(err, syscall.ENOSPC), errors.Is(err, syscall.EDQUOT):
		return fmt.Errorf("%s: %v: free space on that disk; the step is retried", what, err)
	default:
		return fmt.Errorf("%s: %w", what, err)
	}
}
