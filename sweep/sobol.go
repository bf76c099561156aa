package sweep

import "math/rand/v2"

// joeKuo are the direction numbers of Sobol dimensions 2 to 21 from Joe and
// Kuo's new-joe-kuo-6.21201 table (S. Joe and F. Y. Kuo, "Constructing
// Sobol sequences with better two-dimensional projections", SIAM J. Sci.
// Comput. 30, 2008): per dimension, the degree s of its primitive
// polynomial, the polynomial's inner coefficients a, and the initial
// numbers m_1..m_s. Dimension 1 is van der Corput's sequence.
var joeKuo = []struct {
	s, a uint32
	m    []uint32
}{
	{1, 0, []uint32{1}},
	{2, 1, []uint32{1, 3}},
	{3, 1, []uint32{1, 3, 1}},
	{3, 2, []uint32{1, 1, 1}},
	{4, 1, []uint32{1, 1, 3, 3}},
	{4, 4, []uint32{1, 3, 5, 13}},
	{5, 2, []uint32{1, 1, 5, 5, 17}},
	{5, 4, []uint32{1, 1, 5, 5, 5}},
	{5, 7, []uint32{1, 1, 7, 11, 19}},
	{5, 11, []uint32{1, 1, 5, 1, 1}},
	{5, 13, []uint32{1, 1, 1, 3, 11}},
	{5, 14, []uint32{1, 3, 5, 5, 31}},
	{6, 1, []uint32{1, 3, 3, 9, 7, 49}},
	{6, 13, []uint32{1, 1, 1, 15, 21, 21}},
	{6, 16, []uint32{1, 3, 1, 13, 27, 49}},
	{6, 19, []uint32{1, 1, 1, 15, 7, 5}},
	{6, 22, []uint32{1, 3, 1, 15, 13, 25}},
	{6, 25, []uint32{1, 1, 5, 5, 19, 61}},
	{7, 1, []uint32{1, 3, 7, 11, 23, 15, 103}},
	{7, 4, []uint32{1, 3, 7, 13, 13, 15, 69}},
}

// maxSobolDims is how many dimensions the Sobol rule covers; further
// dimensions of a larger search space are drawn at random.
const maxSobolDims = 21

// sobol is a Sobol sequence of up to maxSobolDims dimensions in base 2 with
// 32-bit precision, randomised by a digital shift: every point is XORed with
// one seed-drawn 32-bit mask per dimension. The shift keeps the sequence's
// equidistribution (the first 2^m points stay a (t, m, s)-net) while a new
// seed gives a new, equally even, point set.
type sobol struct {
	v     [][32]uint32
	shift []uint32
}

func newSobol(ndims int, seed int64) *sobol {
	d := min(ndims, maxSobolDims)
	s := &sobol{v: make([][32]uint32, d), shift: make([]uint32, d)}
	rng := rand.New(rand.NewPCG(splitmix(uint64(seed)), 0x50b01))
	for j := range d {
		s.v[j] = directions(j)
		s.shift[j] = rng.Uint32()
	}
	return s
}

// directions computes dimension j's 32 direction numbers v_k (scaled by
// 2^32) with the recurrence v_k = v_{k-s} ^ (v_{k-s} >> s) ^ a_1 v_{k-1} ^
// ... ^ a_{s-1} v_{k-s+1}.
func directions(j int) [32]uint32 {
	var v [32]uint32
	if j == 0 {
		for k := range v {
			v[k] = 1 << (31 - k)
		}
		return v
	}
	p := joeKuo[j-1]
	s := int(p.s)
	for k := 0; k < 32; k++ {
		if k < s {
			v[k] = p.m[k] << (31 - k)
			continue
		}
		x := v[k-s] ^ (v[k-s] >> p.s)
		for i := 1; i < s; i++ {
			if (p.a>>(s-1-i))&1 == 1 {
				x ^= v[k-i]
			}
		}
		v[k] = x
	}
	return v
}

func (s *sobol) dims() int { return len(s.v) }

// at is coordinate d of point i, in [0, 1). Points are taken in Gray-code
// order (Antonov and Saleev), computed directly from i so that a sweep can
// start anywhere in the sequence.
func (s *sobol) at(i uint32, d int) float64 {
	g := i ^ (i >> 1)
	x := s.shift[d]
	for k := 0; g != 0; k, g = k+1, g>>1 {
		if g&1 == 1 {
			x ^= s.v[d][k]
		}
	}
	return float64(x) / (1 << 32)
}
