package compute

import (
	"math/big"
	"testing"
)

func TestParseQuantity(t *testing.T) {
	cases := []struct {
		in   string
		want string // exact value as a fraction; "" for an error
	}{
		{"1", "1/1"},
		{"100m", "1/10"},
		{"1500Mi", "1572864000/1"},
		{"2Gi", "2147483648/1"},
		{"1Ki", "1024/1"},
		{"1Ti", "1099511627776/1"},
		{"1Ei", "1152921504606846976/1"},
		{"500M", "500000000/1"},
		{"1k", "1000/1"},
		{"1E", "1000000000000000000/1"},
		{"1e3", "1000/1"},
		{"1E3", "1000/1"},
		{"1e+3", "1000/1"},
		{"25e-2", "1/4"},
		{"0.5", "1/2"},
		{".5", "1/2"},
		{"5.", "5/1"},
		{"+2", "2/1"},
		{"-1", "-1/1"},
		{"1.5Gi", "1610612736/1"},
		{"0", "0/1"},
		{"", ""},
		{"m", ""},
		{"-", ""},
		{".", ""},
		{"1.5x", ""},
		{"1mi", ""},
		{"1 Gi", ""},
		{"1e", ""},
		{"1e1.5", ""},
		{"1e--3", ""},
		{"1e999", ""},
		{"1GiB", ""},
		{"Gi", ""},
		{"1..5", ""},
	}
	for _, c := range cases {
		q, err := ParseQuantity(c.in)
		switch {
		case c.want == "" && err == nil:
			t.Errorf("ParseQuantity(%q) = %s, want an error", c.in, q.String())
		case c.want != "" && err != nil:
			t.Errorf("ParseQuantity(%q): %v", c.in, err)
		case c.want != "" && q.String() != c.want:
			t.Errorf("ParseQuantity(%q) = %s, want %s", c.in, q.String(), c.want)
		}
	}
}

func TestCeilInt64(t *testing.T) {
	cases := []struct {
		in    string
		scale int64
		want  int64
		ok    bool
	}{
		{"100m", 1000, 100, true},
		{"0.0001", 1000, 1, true}, // rounds up, as Kubernetes does
		{"1.0001m", 1000, 2, true},
		{"1.5", 1, 2, true},
		{"-1.5", 1, -1, true},
		{"2Gi", 1, 2 << 30, true},
		{"8Ei", 1, 0, false},
		{"9E", 1000, 0, false},
	}
	for _, c := range cases {
		q, err := ParseQuantity(c.in)
		if err != nil {
			t.Fatal(err)
		}
		got, ok := ceilInt64(q, c.scale)
		if got != c.want || ok != c.ok {
			t.Errorf("ceilInt64(%s, %d) = %d, %v; want %d, %v", c.in, c.scale, got, ok, c.want, c.ok)
		}
	}
	if _, ok := ceilInt64(big.NewRat(1, 3), 3); !ok {
		t.Error("1/3 * 3 does not fit")
	}
}
