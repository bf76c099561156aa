package reuse

import (
	"io/fs"
	"syscall"
)

// changeID is what changes whenever a file is written or replaced, even
// when its size and modification time are put back (touch -r): its
// inode-change time (ctime, Unix ns) and its inode number.
func changeID(info fs.FileInfo) (ctime int64, ino uint64) {
	if st, ok := info.Sys().(*syscall.Stat_t); ok {
		return st.Ctim.Nano(), st.Ino
	}
	return 0, 0
}
