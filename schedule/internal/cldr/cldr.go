// Package cldr reads the Windows-to-IANA time zone mapping of Unicode
// CLDR's supplemental windowsZones.xml, for the generator of
// schedule/windowszones.go and the test that holds that table to the file.
package cldr

import (
	"encoding/xml"
	"fmt"
	"sort"
)

// DefaultFile is where Debian's unicode-cldr-core installs the file.
const DefaultFile = "/usr/share/unicode/cldr/common/supplemental/windowsZones.xml"

// Zone is one Windows zone name and CLDR's world-wide default IANA zone.
type Zone struct {
	Windows, IANA string
}

// Zones is the file's mapping.
type Zones struct {
	// OtherVersion and TypeVersion are the Windows and IANA data versions
	// CLDR mapped.
	OtherVersion, TypeVersion string
	// Default holds each Windows name once, sorted.
	Default []Zone
}

type file struct {
	Map struct {
		OtherVersion string `xml:"otherVersion,attr"`
		TypeVersion  string `xml:"typeVersion,attr"`
		Zones        []struct {
			Other     string `xml:"other,attr"`
			Territory string `xml:"territory,attr"`
			Type      string `xml:"type,attr"`
		} `xml:"mapZone"`
	} `xml:"windowsZones>mapTimezones"`
}

// WindowsZones parses windowsZones.xml.
func WindowsZones(data []byte) (Zones, error) {
	var f file
	if err := xml.Unmarshal(data, &f); err != nil {
		return Zones{}, err
	}
	z := Zones{OtherVersion: f.Map.OtherVersion, TypeVersion: f.Map.TypeVersion}
	seen := map[string]bool{}
	for _, m := range f.Map.Zones {
		if m.Territory != "001" {
			continue
		}
		if seen[m.Other] {
			return Zones{}, fmt.Errorf("%q has two world-wide defaults", m.Other)
		}
		seen[m.Other] = true
		z.Default = append(z.Default, Zone{Windows: m.Other, IANA: m.Type})
	}
	if len(z.Default) == 0 {
		return Zones{}, fmt.Errorf("no mapZone with territory 001")
	}
	sort.Slice(z.Default, func(i, j int) bool { return z.Default[i].Windows < z.Default[j].Windows })
	return z, nil
}
