package plan

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestSizeCores(t *testing.T) {
	for size, want := range map[string]int{
		"Standard_D4s_v3":          4,
		"Standard_D4_v5":           4,
		"Standard_D16ds_v5":        16,
		"Standard_E16-4s_v3":       16,
		"Standard_NC24ads_A100_v4": 24,
		"Standard_NC6s_v3":         6,
		"Standard_NC6":             6,
		"Standard_ND96asr_v4":      96,
		"Standard_F8s_v2":          8,
		"Standard_B2s":             2,
		"Standard_HB120rs_v3":      120,
		"Standard_M128ms":          128,
		"Standard_A4_v2":           4,
		"Standard_A2m_v2":          2,
		"Standard_D4":              8,
		"Standard_D11":             2,
		"Standard_DS3_v2":          4,
		"Standard_D3_v2":           4,
		"Standard_D15_v2":          20,
		"Standard_DS12_v2":         4,
		"Standard_A0":              1,
		"Basic_A2":                 2,
		"Standard_A9":              16,
		"Standard_GS5":             32,
		"STANDARD_NC6":             6,
		"standard_ds3_v2":          4,
	} {
		got, ok := SizeCores(size)
		assert.True(t, ok, size)
		assert.Equal(t, want, got, size)
	}
	for _, bad := range []string{"", "D4", "Standard_", "Standard_D", "Standard_DS99_v2", "Premium_D4s_v3", "Standard_4D"} {
		_, ok := SizeCores(bad)
		assert.False(t, ok, bad)
	}
}
