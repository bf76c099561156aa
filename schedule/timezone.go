package schedule

import (
	"errors"
	"maps"
	"slices"
	"strings"
	"time"

	// Time zones load the same on every machine, whether or not it has
	// the system's zoneinfo: a schedule's times must not depend on it.
	_ "time/tzdata"

	"github.com/porch-pipelines/porch/compiler"
)

//go:generate sh -c "go run ./internal/genzones > windowszones.go"

// Zone is a schedule's time zone: as written, and the IANA zone it is.
type Zone struct {
	// Name is what the file says: a Windows name as Azure ML lists them
	// ("Pacific Standard Time"), or an IANA name ("America/Los_Angeles").
	Name string
	// IANA is the zone Temporal computes times in.
	IANA     string
	Location *time.Location
}

// UTC is the zone of a schedule that names none, as in Azure ML.
var UTC = Zone{Name: "UTC", IANA: "UTC", Location: time.UTC}

// errUnknownZone is the error of a name that is no zone.
var errUnknownZone = errors.New("unknown time zone")

// LoadZone finds a time zone by its Windows name (CLDR's mapping, letter
// case ignored, as Azure ML's schema lists them) or by its IANA name.
func LoadZone(name string) (Zone, error) {
	name = strings.TrimSpace(name)
	if iana, ok := windowsZone(name); ok {
		loc, err := time.LoadLocation(iana)
		if err != nil {
			return Zone{}, err
		}
		return Zone{Name: name, IANA: iana, Location: loc}, nil
	}
	// time.LoadLocation takes "Local" and "" too, which are no zone a
	// schedule can name; and it takes paths, which a name is not.
	if name == "" || name == "Local" || strings.Contains(name, "..") || strings.HasPrefix(name, "/") {
		return Zone{}, errUnknownZone
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		return Zone{}, errUnknownZone
	}
	return Zone{Name: name, IANA: loc.String(), Location: loc}, nil
}

// azureZones are the Windows names Azure ML's schedule reference lists
// that CLDR's table (as Debian ships it) does not hold: Windows renamed
// Turkey's zone, and retired the other two, which Azure ML still lists.
var azureZones = map[string]string{
	"Türkiye Standard Time":      "Europe/Istanbul", // CLDR: "Turkey Standard Time"
	"Kamchatka Standard Time":    "Asia/Kamchatka",
	"Mid-Atlantic Standard Time": "Etc/GMT+2", // (UTC-02:00) Mid-Atlantic - Old
}

func windowsZone(name string) (string, bool) {
	for _, table := range []map[string]string{windowsZones, azureZones} {
		if iana, ok := table[name]; ok {
			return iana, true
		}
		for w, iana := range table {
			if strings.EqualFold(w, name) {
				return iana, true
			}
		}
	}
	return "", false
}

// zoneHint suggests the Windows name closest to an unknown one.
func zoneHint(name string) string {
	return compiler.Suggest(name, slices.Sorted(maps.Keys(windowsZones)))
}

// String is "Pacific Standard Time (America/Los_Angeles)", or the IANA
// name alone when that is what the file says.
func (z Zone) String() string {
	if z.Name == z.IANA || z.Name == "" {
		return z.IANA
	}
	return z.Name + " (" + z.IANA + ")"
}
