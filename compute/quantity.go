package compute

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"strings"
)

// ParseQuantity parses a Kubernetes resource quantity: a signed decimal
// number (1, 0.5, .5, 5.) followed by a binary suffix (Ki Mi Gi Ti Pi Ei),
// a decimal one (m "" k M G T P E) or a decimal exponent (e3, E-2). The
// value is exact.
func ParseQuantity(s string) (*big.Rat, error) {
	if s == "" {
		return nil, errors.New("empty quantity")
	}
	num, rest := splitNumber(s)
	if num == "" || num == "+" || num == "-" {
		return nil, fmt.Errorf("%q does not start with a number", s)
	}
	v, ok := new(big.Rat).SetString(num)
	if !ok {
		return nil, fmt.Errorf("%q does not start with a number", s)
	}
	mult, err := suffixMultiplier(rest)
	if err != nil {
		return nil, fmt.Errorf("%q: %v", s, err)
	}
	return v.Mul(v, mult), nil
}

// splitNumber splits s after its <signedNumber>: an optional sign, digits,
// and an optional point with digits; at least one digit.
func splitNumber(s string) (num, rest string) {
	i := 0
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		i++
	}
	digits := 0
	for i < len(s) && isDigit(s[i]) {
		i++
		digits++
	}
	if i < len(s) && s[i] == '.' {
		i++
		for i < len(s) && isDigit(s[i]) {
			i++
			digits++
		}
	}
	if digits == 0 {
		return "", s
	}
	return s[:i], s[i:]
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// maxExponent bounds a decimal exponent: 10^18 already exceeds what any
// resource holds in int64 milli-units.
const maxExponent = 30

func suffixMultiplier(suffix string) (*big.Rat, error) {
	binary := map[string]uint{"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
	decimal := map[string]int{"m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
	if shift, ok := binary[suffix]; ok {
		return new(big.Rat).SetInt(new(big.Int).Lsh(big.NewInt(1), shift)), nil
	}
	if exp, ok := decimal[suffix]; ok {
		return pow10(exp), nil
	}
	if suffix[0] == 'e' || suffix[0] == 'E' {
		digits := strings.TrimLeft(suffix[1:], "+-")
		if len(suffix)-len(digits) > 2 || digits == "" || strings.TrimLeft(digits, "0123456789") != "" {
			return nil, fmt.Errorf("exponent %q is not a whole number", suffix)
		}
		var exp int
		for _, c := range digits {
			exp = exp*10 + int(c-'0')
			if exp > maxExponent {
				return nil, fmt.Errorf("exponent %q is too large", suffix)
			}
		}
		if suffix[1] == '-' {
			exp = -exp
		}
		return pow10(exp), nil
	}
	return nil, fmt.Errorf("unknown suffix %q: use m, k, M, G, T, P, E, Ki, Mi, Gi, Ti, Pi, Ei or an exponent such as e3", suffix)
}

func pow10(exp int) *big.Rat {
	p := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(max(exp, -exp))), nil)
	if exp < 0 {
		return new(big.Rat).SetFrac(big.NewInt(1), p)
	}
	return new(big.Rat).SetInt(p)
}

// ceilInt64 rounds v*scale up to a whole number, as Kubernetes rounds a
// quantity to the precision it is read at (1.0001m of CPU is 2m). ok is
// false when the result does not fit in an int64.
func ceilInt64(v *big.Rat, scale int64) (int64, bool) {
	x := new(big.Rat).Mul(v, big.NewRat(scale, 1))
	q, m := new(big.Int).DivMod(x.Num(), x.Denom(), new(big.Int))
	if m.Sign() != 0 {
		q.Add(q, big.NewInt(1))
	}
	if !q.IsInt64() || q.Int64() == math.MinInt64 {
		return 0, false
	}
	return q.Int64(), true
}

// ParseQuantityUnits parses a Kubernetes quantity as a whole number of
// 1/scale units, rounding up as Kubernetes does: scale 1000 reads CPU in
// millicores, scale 1 memory in bytes. It refuses negative quantities.
func ParseQuantityUnits(s string, scale int64) (int64, error) {
	q, err := ParseQuantity(s)
	if err != nil {
		return 0, err
	}
	if q.Sign() < 0 {
		return 0, fmt.Errorf("%q is negative", s)
	}
	v, ok := ceilInt64(q, scale)
	if !ok {
		return 0, fmt.Errorf("%q is too large", s)
	}
	return v, nil
}
