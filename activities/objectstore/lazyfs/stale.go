package lazyfs

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
)

// DetachStale lazily unmounts every porch mount at or below dir: what an
// attempt left when its worker died before unmounting (such a mount answers
// "transport endpoint is not connected", and a folder holding it cannot be
// removed), or a mount still up that the folder's new owner replaces. Other
// file systems are left alone. It returns the mount points it detached.
func DetachStale(dir string) ([]string, error) {
	return detach(dir, func(string) bool { return true })
}

// DetachDead lazily unmounts the porch mounts at or below dir whose process
// is gone (they answer "transport endpoint is not connected"), and leaves
// the live ones, which another worker may be using. It returns the mount
// points it detached.
func DetachDead(dir string) ([]string, error) {
	return detach(dir, func(p string) bool {
		_, err := os.Stat(p)
		return errors.Is(err, syscall.ENOTCONN)
	})
}

// detach lazily unmounts the porch mounts at or below dir that doomed picks.
func detach(dir string, doomed func(mountPoint string) bool) ([]string, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	points, err := Mounts()
	if err != nil {
		return nil, err
	}
	var detached []string
	// Deepest first, so a mount inside another goes before it.
	slices.SortFunc(points, func(a, b string) int { return len(b) - len(a) })
	for _, p := range points {
		if (p != dir && !strings.HasPrefix(p, dir+string(filepath.Separator))) || !doomed(p) {
			continue
		}
		if err := syscall.Unmount(p, syscall.MNT_DETACH); err != nil {
			return detached, fmt.Errorf("unmount the stale mount %s: %w", p, err)
		}
		detached = append(detached, p)
	}
	return detached, nil
}

// Mounts lists the mount points of porch's mounts (type fuse.porch in
// /proc/self/mountinfo) on this host.
func Mounts() ([]string, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil // no /proc: no FUSE mounts of porch either
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		// id parent major:minor root mountpoint options [optional...] - fstype source superoptions
		fields := strings.Fields(sc.Text())
		sep := slices.Index(fields, "-")
		if sep < 5 || sep+1 >= len(fields) || fields[sep+1] != "fuse."+fsType {
			continue
		}
		out = append(out, unescape(fields[4]))
	}
	return out, sc.Err()
}

// unescape decodes the octal escapes (\040 for a space) of mountinfo.
func unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
