package schedule

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/porch-pipelines/porch/schedule/internal/cldr"
)

// TestWindowsZonesAreCLDRs holds the embedded table to CLDR's
// windowsZones.xml as Debian's unicode-cldr-core installs it.
func TestWindowsZonesAreCLDRs(t *testing.T) {
	data, err := os.ReadFile(cldr.DefaultFile)
	if os.IsNotExist(err) {
		t.Skipf("%s is absent: apt-get install unicode-cldr-core (.ci/run installs it)", cldr.DefaultFile)
	}
	require.NoError(t, err)
	zones, err := cldr.WindowsZones(data)
	require.NoError(t, err)
	want := map[string]string{}
	for _, z := range zones.Default {
		want[z.Windows] = z.IANA
	}
	assert.Equal(t, want, windowsZones, "regenerate the table: go generate ./schedule")
	assert.Greater(t, len(windowsZones), 130)
}

// TestAzureTimeZones loads every time_zone Azure ML's schedule reference
// lists, and checks some against the zones they are.
func TestAzureTimeZones(t *testing.T) {
	f, err := os.Open(filepath.Join("testdata", "azure-time-zones.txt"))
	require.NoError(t, err)
	defer f.Close()
	sc := bufio.NewScanner(f)
	n := 0
	for sc.Scan() {
		name := strings.TrimSpace(sc.Text())
		if name == "" || strings.HasPrefix(name, "#") {
			continue
		}
		n++
		z, err := LoadZone(name)
		if assert.NoError(t, err, name) {
			assert.Equal(t, name, z.Name)
			assert.NotNil(t, z.Location, name)
		}
	}
	assert.Equal(t, 131, n, "the reference lists 131 zones")
	for name, iana := range map[string]string{
		"Pacific Standard Time": "America/Los_Angeles", "pacific standard time": "America/Los_Angeles",
		"W. Europe Standard Time": "Europe/Berlin", "India Standard Time": "Asia/Calcutta", "UTC": "Etc/UTC",
		"Türkiye Standard Time": "Europe/Istanbul", "America/New_York": "America/New_York", "Europe/Paris": "Europe/Paris",
	} {
		z, err := LoadZone(name)
		require.NoError(t, err, name)
		assert.Equal(t, iana, z.IANA, name)
	}
	// The zone's rules are the IANA zone's: Pacific time is 7 hours behind
	// UTC in July, 8 in January.
	z, err := LoadZone("Pacific Standard Time")
	require.NoError(t, err)
	_, jul := time.Date(2026, 7, 1, 0, 0, 0, 0, z.Location).Zone()
	_, jan := time.Date(2026, 1, 1, 0, 0, 0, 0, z.Location).Zone()
	assert.Equal(t, []int{-7 * 3600, -8 * 3600}, []int{jul, jan})
}

// TestUnknownZones refuses what names no zone, paths and Local included.
func TestUnknownZones(t *testing.T) {
	for _, name := range []string{"Pacific Standard Tme", "Local", "", "../../etc/passwd", "/etc/localtime", "Mars/Olympus_Mons"} {
		_, err := LoadZone(name)
		assert.Error(t, err, name)
	}
}
