package plan

import (
	"regexp"
	"strconv"
	"strings"
)

// vmSizeName is an Azure VM size name after its tier prefix:
// family letters, a number, an optional constrained count (-4), feature
// letters (s, a, d, ...), then accelerator and version parts (_A100_v4).
var vmSizeName = regexp.MustCompile(`^([A-Za-z]+)(\d+)(?:-\d+)?([A-Za-z]*)((?:_[A-Za-z0-9]+)*)$`)

// indexedCores are the cores of the older series whose number is an index,
// not a vCPU count: A (Basic_ and Standard_), D and DS v1 and v2, G and GS.
var indexedCores = map[string]map[int]int{
	"A":  {0: 1, 1: 1, 2: 2, 3: 4, 4: 8, 5: 2, 6: 4, 7: 8, 8: 8, 9: 16, 10: 8, 11: 16},
	"D":  {1: 1, 2: 2, 3: 4, 4: 8, 5: 16, 11: 2, 12: 4, 13: 8, 14: 16, 15: 20},
	"DS": {1: 1, 2: 2, 3: 4, 4: 8, 5: 16, 11: 2, 12: 4, 13: 8, 14: 16, 15: 20},
	"G":  {1: 2, 2: 4, 3: 8, 4: 16, 5: 32},
	"GS": {1: 2, 2: 4, 3: 8, 4: 16, 5: 32},
}

// SizeCores returns the vCPUs of one VM of an Azure size, as quotas count
// them, and false for a name it cannot read. Since 2014 the number in a
// size's name is its vCPU count (Standard_D4s_v3: 4, Standard_NC24ads_A100_v4:
// 24, Standard_E16-4s_v3: 16, the constrained count does not lower the
// quota). The older A, D/DS (v1, v2) and G/GS series number their sizes
// instead (Standard_D4: 8, Standard_DS3_v2: 4), and are read from a table.
func SizeCores(size string) (int, bool) {
	// Azure reads size names in any case (STANDARD_NC6).
	_, name, ok := strings.Cut(size, "_")
	if tier := strings.ToLower(strings.TrimSuffix(size, name)); !ok || tier != "standard_" && tier != "basic_" {
		return 0, false
	}
	m := vmSizeName.FindStringSubmatch(name)
	if m == nil {
		return 0, false
	}
	family, features, rest := strings.ToUpper(m[1]), strings.ToLower(m[3]), strings.ToLower(m[4])
	n, err := strconv.Atoi(m[2])
	if err != nil {
		return 0, false
	}
	if family == "D" && features == "s" {
		family, features = "DS", "" // Standard_D3s is the DS3 of the old naming
	}
	table, numbered := indexedCores[family]
	if numbered && features == "" && (rest == "" || rest == "_v2" && family != "A") {
		c, ok := table[n]
		return c, ok
	}
	return n, n > 0
}
