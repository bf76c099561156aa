package monitor

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// statLine builds a stat line as the kernel writes it, with the fields this
// package reads set and the others 0.
func statLine(pid int, comm string, state byte, ppid int, utime, stime, start, rss int) string {
	f := make([]string, 52)
	for i := range f {
		f[i] = "0"
	}
	f[statState-1] = string(state)
	f[statPPID-1] = strconv.Itoa(ppid)
	f[statUtime-1] = strconv.Itoa(utime)
	f[statStime-1] = strconv.Itoa(stime)
	f[statStartTime-1] = strconv.Itoa(start)
	f[statRSS-1] = strconv.Itoa(rss)
	return strconv.Itoa(pid) + " (" + comm + ") " + strings.Join(f[statState-1:], " ") + "\n"
}

func TestParseStatLiteralLines(t *testing.T) {
	// A real line from this machine's /proc/<pid>/stat (a sleep), with
	// utime and stime changed from 0 to 3 and 1.
	real := "26185 (sleep) S 26183 26183 23124 0 -1 4194304 132 0 1 0 3 1 0 0 20 0 1 0 682612 2990080 414 " +
		"18446744073709551615 94594513281024 94594513298953 140730989133264 0 0 0 0 6 0 1 0 0 17 0 0 0 0 0 0 " +
		"94594513313040 94594513314304 94595331850240 140730989140482 140730989140492 140730989140492 140730989141993 0\n"
	ps, err := parseStat([]byte(real))
	require.NoError(t, err)
	assert.Equal(t, procStat{pid: 26185, ppid: 26183, state: 'S', ticks: 4, start: 682612, rssPages: 414}, ps)

	for _, comm := range []string{"python3 run.py", "a) S 99 (b", ")", "((", "x)) R 1 2 3"} {
		ps, err := parseStat([]byte(statLine(77, comm, 'R', 12, 30, 12, 900, 55)))
		require.NoError(t, err, "comm %q", comm)
		assert.Equal(t, procStat{pid: 77, ppid: 12, state: 'R', ticks: 42, start: 900, rssPages: 55}, ps, "comm %q", comm)
	}

	neg, err := parseStat([]byte(statLine(5, "k", 'S', 2, 0, 0, 1, -1)))
	require.NoError(t, err)
	assert.Zero(t, neg.rssPages, "a negative rss counts as none")
}

func TestParseStatRejectsMalformedLines(t *testing.T) {
	cases := map[string]string{
		"no comm":       "12 sleep S 1 2 3",
		"no pid":        "(sleep) S 1 2 3",
		"bad pid":       "x1 (sleep) S 1 2 3",
		"short":         "12 (sleep) S 1 2 3",
		"bad number":    strings.Replace(statLine(12, "sleep", 'S', 1, 5, 6, 7, 8), " 5 6 ", " five 6 ", 1),
		"unclosed comm": "12 (sleep S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22",
	}
	for name, line := range cases {
		_, err := parseStat([]byte(line))
		assert.Error(t, err, name)
	}
}

// TestScanReadsFakeProcRoot scans a directory laid out like /proc, with a
// process whose comm is odd, a non-process entry and an unparsable stat.
func TestScanReadsFakeProcRoot(t *testing.T) {
	root := t.TempDir()
	write := func(name, content string) {
		require.NoError(t, os.MkdirAll(filepath.Join(root, name), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(root, name, "stat"), []byte(content), 0o644))
	}
	write("1", statLine(1, "init", 'S', 0, 1, 1, 1, 10))
	write("20", statLine(20, "my (odd) name", 'R', 1, 5, 5, 2, 20))
	write("21", "garbage")
	write("self", statLine(20, "self", 'R', 1, 5, 5, 2, 20))
	sc := scanner{root: root}
	procs, err := sc.scan()
	require.NoError(t, err)
	assert.ElementsMatch(t, []procStat{
		{pid: 1, ppid: 0, state: 'S', ticks: 2, start: 1, rssPages: 10},
		{pid: 20, ppid: 1, state: 'R', ticks: 10, start: 2, rssPages: 20},
	}, procs)

	_, err = (&scanner{root: filepath.Join(root, "missing")}).scan()
	assert.ErrorContains(t, err, "Linux /proc")
}

func TestMeasureTreesCountsDescendantsOnce(t *testing.T) {
	procs := []procStat{
		{pid: 1, ppid: 0, state: 'S', ticks: 1000, start: 1, rssPages: 1},
		{pid: 10, ppid: 1, state: 'S', ticks: 50, start: 100, rssPages: 4},
		{pid: 11, ppid: 10, state: 'R', ticks: 70, start: 200, rssPages: 8},
		{pid: 12, ppid: 11, state: 'Z', ticks: 9, start: 300, rssPages: 0},
		{pid: 13, ppid: 11, state: 'S', ticks: 5, start: 400, rssPages: 16},
		{pid: 20, ppid: 1, state: 'S', ticks: 3, start: 500, rssPages: 32},
	}
	prev := map[procKey]uint64{
		{10, 100}: 40, // still there: counts 10
		{11, 200}: 70, // idle since: counts 0
		{13, 399}: 1,  // pid 13 reused: the new one counts all its 5
		{14, 450}: 99, // exited: drops out
	}
	// Root 11 is inside root 10's tree and 99 does not exist.
	u, now := measureTrees(procs, []int{10, 11, 99}, prev)
	assert.Equal(t, treeUsage{processes: 3, rssPages: 28, deltaTicks: 15}, u)
	assert.Len(t, now, len(procs))
	assert.Equal(t, uint64(70), now[procKey{11, 200}])

	none, _ := measureTrees(procs, nil, prev)
	assert.Equal(t, treeUsage{}, none)
}

func TestClockTicksMatchesGetconf(t *testing.T) {
	out, err := exec.Command("getconf", "CLK_TCK").Output()
	if err != nil {
		t.Skipf("getconf CLK_TCK not available to compare with: %v", err)
	}
	want, err := strconv.ParseFloat(strings.TrimSpace(string(out)), 64)
	require.NoError(t, err)
	assert.Equal(t, want, clockTicks())
}

// BenchmarkScanProc measures one scan of this machine's /proc, the part of
// a Sample that grows with the number of processes on the node.
func BenchmarkScanProc(b *testing.B) {
	sc := scanner{root: "/proc"}
	n := 0
	for b.Loop() {
		procs, err := sc.scan()
		if err != nil {
			b.Fatal(err)
		}
		n = len(procs)
	}
	b.ReportMetric(float64(n), "procs")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(max(n, 1))/1e3, "µs/proc")
}
