package plan

import (
	"slices"
	"testing"
)

func TestSizeResources(t *testing.T) {
	const gi = int64(1) << 30
	for _, c := range []struct {
		size string
		want ResourceList
		ok   bool
	}{
		{"Standard_DS3_v2", ResourceList{MilliCPU: 4000, MemoryBytes: 14 * gi}, true},
		{"Standard_E4s_v3", ResourceList{MilliCPU: 4000, MemoryBytes: 32 * gi}, true},
		{"STANDARD_E8S_V3", ResourceList{MilliCPU: 8000, MemoryBytes: 64 * gi}, true},
		{"Standard_D4as_v5", ResourceList{MilliCPU: 4000, MemoryBytes: 16 * gi}, true},
		{"Standard_F8s_v2", ResourceList{MilliCPU: 8000, MemoryBytes: 16 * gi}, true},
		{"Standard_NC6s_v3", ResourceList{MilliCPU: 6000, MemoryBytes: 112 * gi, GPU: 1}, true},
		{"Standard_NC24ads_A100_v4", ResourceList{MilliCPU: 24000, MemoryBytes: 220 * gi, GPU: 1}, true},
		// A GPU size missing from the table is unknown rather than
		// guessed without GPUs.
		{"Standard_NV12s_v3", ResourceList{}, false},
		{"Standard_F4", ResourceList{}, false},
		{"Standard_A2", ResourceList{}, false},
		{"gpu-small", ResourceList{}, false},
	} {
		got, ok := SizeResources(c.size)
		if got != c.want || ok != c.ok {
			t.Errorf("SizeResources(%q) = %+v, %v; want %+v, %v", c.size, got, ok, c.want, c.ok)
		}
	}
}

func TestCheapestFirst(t *testing.T) {
	const gi = int64(1) << 30
	it := func(name string, cpu, mem, gpu int64) InstanceType {
		return InstanceType{Name: name, Requests: ResourceList{MilliCPU: cpu, MemoryBytes: mem * gi}, Limits: ResourceList{GPU: gpu}}
	}
	types := []InstanceType{
		it("gpu", 4000, 16, 1), it("big", 8000, 32, 0), it("small", 1000, 4, 0),
		it("medium-b", 2000, 8, 0), it("medium-a", 2000, 8, 0), it("wide", 2000, 16, 0),
	}
	names := func(ts []InstanceType) []string {
		var out []string
		for _, t := range ts {
			out = append(out, t.Name)
		}
		return out
	}
	for _, c := range []struct {
		need ResourceList
		want []string
	}{
		// CPU before memory, then name; GPUs cost most.
		{ResourceList{MilliCPU: 500, MemoryBytes: gi}, []string{"small", "medium-a", "medium-b", "wide", "big", "gpu"}},
		{ResourceList{MilliCPU: 2000, MemoryBytes: 10 * gi}, []string{"wide", "big", "gpu"}},
		{ResourceList{MilliCPU: 1000, GPU: 1}, []string{"gpu"}},
		{ResourceList{MilliCPU: 16000}, nil},
	} {
		if got := names(CheapestFirst(types, c.need)); !slices.Equal(got, c.want) {
			t.Errorf("CheapestFirst(%v) = %v, want %v", c.need, got, c.want)
		}
	}
}

func TestServerlessFor(t *testing.T) {
	cat := &Catalog{InstanceTypes: []InstanceType{{Name: "gpu-small", Requests: ResourceList{MilliCPU: 1000, MemoryBytes: 1 << 30}}}}
	s, override, ok := ServerlessFor(cat, "")
	if !ok || override != "" || s == nil || s.From != DefaultInstanceTypeName || s.Requests != NeedOf(DefaultInstanceType()) {
		t.Errorf("no instance type: got %+v, %q, %v; want defaultinstancetype's requests", s, override, ok)
	}
	if s, override, ok := ServerlessFor(cat, "gpu-small"); !ok || override != "gpu-small" || s != nil {
		t.Errorf("applied type: got %+v, %q, %v; want the override gpu-small", s, override, ok)
	}
	if s, _, ok := ServerlessFor(cat, "Standard_E4s_v3"); !ok || s == nil || s.Requests.MilliCPU != 4000 || s.From != "Standard_E4s_v3" {
		t.Errorf("VM size: got %+v, %v; want 4 CPUs from Standard_E4s_v3", s, ok)
	}
	if _, _, ok := ServerlessFor(nil, "gpu-large"); ok {
		t.Errorf("unknown name: got ok")
	}
}
