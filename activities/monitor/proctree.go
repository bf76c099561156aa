package monitor

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

// procStat is what the monitor reads from one /proc/<pid>/stat line.
type procStat struct {
	pid   int
	ppid  int
	state byte
	// ticks is utime+stime: CPU time of all the process's threads, in clock
	// ticks.
	ticks uint64
	// start is the start time in clock ticks after boot. With pid it
	// identifies a process across scans, so a reused pid is a new process.
	start    uint64
	rssPages uint64
}

// Field numbers of /proc/<pid>/stat, as proc(5) numbers them (pid is 1,
// comm is 2). Fields from state (3) on follow the last ')'.
const (
	statState     = 3
	statPPID      = 4
	statUtime     = 14
	statStime     = 15
	statStartTime = 22
	statRSS       = 24
)

// parseStat parses one /proc/<pid>/stat line. comm is in parentheses and
// may itself hold spaces and parentheses, but the kernel never puts ')'
// after it, so the fields after comm start after the last ')'.
func parseStat(line []byte) (procStat, error) {
	var ps procStat
	open := bytes.IndexByte(line, '(')
	end := bytes.LastIndexByte(line, ')')
	if open < 1 || end < open {
		return ps, fmt.Errorf("stat line %q has no (comm) field", truncate(line))
	}
	pid, err := strconv.Atoi(string(bytes.TrimSpace(line[:open])))
	if err != nil {
		return ps, fmt.Errorf("stat line %q: pid is not a number", truncate(line))
	}
	fields := bytes.Fields(line[end+1:])
	// fields[0] is field statState.
	field := func(n int) []byte { return fields[n-statState] }
	if len(fields) < statRSS-statState+1 || len(field(statState)) != 1 {
		return ps, fmt.Errorf("stat line %q: want at least %d fields after comm, found %d",
			truncate(line), statRSS-statState+1, len(fields))
	}
	ps.pid, ps.state = pid, field(statState)[0]
	ppid, err1 := strconv.Atoi(string(field(statPPID)))
	utime, err2 := strconv.ParseUint(string(field(statUtime)), 10, 64)
	stime, err3 := strconv.ParseUint(string(field(statStime)), 10, 64)
	start, err4 := strconv.ParseUint(string(field(statStartTime)), 10, 64)
	// rss is signed in the kernel's format; a negative count means none.
	rss, err5 := strconv.ParseInt(string(field(statRSS)), 10, 64)
	if err := errors.Join(err1, err2, err3, err4, err5); err != nil {
		return ps, fmt.Errorf("stat line %q: %w", truncate(line), err)
	}
	ps.ppid, ps.ticks, ps.start = ppid, utime+stime, start
	ps.rssPages = uint64(max(rss, 0))
	return ps, nil
}

func truncate(line []byte) string {
	const most = 80
	if len(line) > most {
		return string(line[:most]) + "..."
	}
	return string(line)
}

// scanner reads every process's stat file under a proc root, reusing one
// buffer. It is not safe for concurrent use.
type scanner struct {
	root string
	buf  []byte
}

// scan returns the stat of every process under the proc root. Processes
// that exit during the scan, or whose stat cannot be read or parsed, are left
// out: a monitor must keep going when one process is odd.
func (sc *scanner) scan() ([]procStat, error) {
	dir, err := os.Open(sc.root)
	if err != nil {
		return nil, fmt.Errorf("list processes: %w (the process tree needs a Linux /proc)", err)
	}
	names, err := dir.Readdirnames(-1)
	dir.Close()
	if err != nil {
		return nil, fmt.Errorf("list processes in %s: %w", sc.root, err)
	}
	if sc.buf == nil {
		sc.buf = make([]byte, 4096)
	}
	procs := make([]procStat, 0, len(names))
	for _, name := range names {
		if name == "" || name[0] < '0' || name[0] > '9' {
			continue
		}
		line, ok := sc.read(sc.root + "/" + name + "/stat")
		if !ok {
			continue
		}
		if ps, err := parseStat(line); err == nil {
			procs = append(procs, ps)
		}
	}
	return procs, nil
}

// read reads one small proc file, up to its first newline, into the
// scanner's buffer. Raw system calls keep it at open, read, close: os.File
// would also try to register the file with the runtime poller.
func (sc *scanner) read(path string) ([]byte, bool) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, false
	}
	defer unix.Close(fd)
	n := 0
	for n < len(sc.buf) {
		m, err := unix.Read(fd, sc.buf[n:])
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil {
			return nil, false
		}
		n += m
		// The kernel writes a whole stat line, ending in a newline, in one
		// read; stopping there saves the read that would return EOF.
		if m == 0 || sc.buf[n-1] == '\n' {
			break
		}
	}
	return sc.buf[:n], true
}

// procKey identifies a process across scans; pids alone are reused.
type procKey struct {
	pid   int
	start uint64
}

// treeUsage is the usage of the process trees in one scan.
type treeUsage struct {
	processes int
	rssPages  uint64
	// deltaTicks is the CPU the trees used since the previous scan: for a
	// process already there, the change in its ticks; for one that started
	// after it, all its ticks. Processes that exited in between drop out.
	deltaTicks uint64
}

// measureTrees sums the usage of the trees under roots (the roots and all
// their descendants, each process once). prev holds the ticks of every
// process of the previous scan; it returns the same for this scan. Zombies
// have exited and are not counted.
func measureTrees(procs []procStat, roots []int, prev map[procKey]uint64) (treeUsage, map[procKey]uint64) {
	now := make(map[procKey]uint64, len(procs))
	byPID := make(map[int]int, len(procs))
	children := make(map[int][]int, len(procs))
	for i, p := range procs {
		now[procKey{p.pid, p.start}] = p.ticks
		byPID[p.pid] = i
		children[p.ppid] = append(children[p.ppid], p.pid)
	}
	var u treeUsage
	seen := make(map[int]bool)
	queue := append([]int(nil), roots...)
	for len(queue) > 0 {
		pid := queue[0]
		queue = queue[1:]
		i, ok := byPID[pid]
		if !ok || seen[pid] {
			continue
		}
		seen[pid] = true
		p := procs[i]
		if p.state == 'Z' || p.state == 'X' {
			continue
		}
		u.processes++
		u.rssPages += p.rssPages
		if before, ok := prev[procKey{p.pid, p.start}]; !ok {
			u.deltaTicks += p.ticks
		} else if p.ticks > before {
			u.deltaTicks += p.ticks - before
		}
		queue = append(queue, children[pid]...)
	}
	return u, now
}

// atClkTck is the ELF auxiliary vector key of the kernel's clock tick rate
// (AT_CLKTCK in <linux/auxvec.h>), which sysconf(_SC_CLK_TCK) reads.
const atClkTck = 17

// clockTicks returns the rate, per second, of the tick counts in
// /proc/<pid>/stat: the AT_CLKTCK value the kernel hands every process in its
// auxiliary vector, or 100 (USER_HZ on every Linux architecture Go supports)
// when that cannot be read.
func clockTicks() float64 {
	vec, err := unix.Auxv()
	if err != nil {
		return 100
	}
	for _, kv := range vec {
		if kv[0] == atClkTck && kv[1] > 0 {
			return float64(kv[1])
		}
	}
	return 100
}
