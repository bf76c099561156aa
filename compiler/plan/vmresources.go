package plan

import "strings"

// sizeTable holds the memory (MiB) and NVIDIA GPUs of Azure VM sizes
// whose memory per core follows no family rule: the older D/DS v2 sizes
// and the GPU sizes Azure ML jobs name most. Keys are lower case; cores
// come from SizeCores.
var sizeTable = map[string]struct{ memMiB, gpus int64 }{
	"standard_d1_v2": {3584, 0}, "standard_d2_v2": {7168, 0}, "standard_d3_v2": {14336, 0},
	"standard_d4_v2": {28672, 0}, "standard_d5_v2": {57344, 0},
	"standard_ds1_v2": {3584, 0}, "standard_ds2_v2": {7168, 0}, "standard_ds3_v2": {14336, 0},
	"standard_ds4_v2": {28672, 0}, "standard_ds5_v2": {57344, 0},
	"standard_ds11_v2": {14336, 0}, "standard_ds12_v2": {28672, 0}, "standard_ds13_v2": {57344, 0}, "standard_ds14_v2": {114688, 0},
	"standard_d11_v2": {14336, 0}, "standard_d12_v2": {28672, 0}, "standard_d13_v2": {57344, 0}, "standard_d14_v2": {114688, 0},
	"standard_nc6": {57344, 1}, "standard_nc12": {114688, 2}, "standard_nc24": {229376, 4},
	"standard_nc6s_v3": {114688, 1}, "standard_nc12s_v3": {229376, 2}, "standard_nc24s_v3": {458752, 4}, "standard_nc24rs_v3": {458752, 4},
	"standard_nc4as_t4_v3": {28672, 1}, "standard_nc8as_t4_v3": {57344, 1}, "standard_nc16as_t4_v3": {112640, 1},
	"standard_nc64as_t4_v3":    {450560, 4},
	"standard_nc24ads_a100_v4": {225280, 1}, "standard_nc48ads_a100_v4": {450560, 2}, "standard_nc96ads_a100_v4": {901120, 4},
	"standard_nd40rs_v2": {688128, 8}, "standard_nd96asr_v4": {921600, 8}, "standard_nd96amsr_a100_v4": {1945600, 8},
}

// memPerCore is the memory per vCPU (GiB) of the general-purpose (D),
// memory-optimised (E) and compute-optimised (F) families from v2 (F) and
// v3 (D, E) on, whatever their feature letters.
var memPerCore = map[string]int64{"d": 4, "e": 8, "f": 2}

// SizeResources returns what one VM of an Azure size offers a job: its
// vCPUs, memory and NVIDIA GPUs, and false for a size porch does not know
// (a GPU size missing from its table, or an older family).
func SizeResources(size string) (ResourceList, bool) {
	cores, ok := SizeCores(size)
	if !ok {
		return ResourceList{}, false
	}
	r := ResourceList{MilliCPU: int64(cores) * 1000}
	key := strings.ToLower(size)
	if s, ok := sizeTable[key]; ok {
		r.MemoryBytes, r.GPU = s.memMiB<<20, s.gpus
		return r, true
	}
	m := vmSizeName.FindStringSubmatch(strings.TrimPrefix(key, "standard_"))
	if m == nil || strings.HasPrefix(key, "basic_") {
		return ResourceList{}, false
	}
	perCore, known := memPerCore[m[1]]
	newer := strings.Contains(m[4], "_v") && m[4] != "_v1" && (m[1] == "f" || m[4] != "_v2")
	if !known || !newer {
		return ResourceList{}, false
	}
	r.MemoryBytes = int64(cores) * perCore << 30
	return r, true
}
