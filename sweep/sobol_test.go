package sweep

import (
	"fmt"
	"math"
	"testing"

	"github.com/porch-pipelines/porch/compiler/plan"
	"github.com/stretchr/testify/require"
)

func TestSobolFirstPoints(t *testing.T) {
	// Unshifted, the first points of dimensions 1 and 2 are the textbook
	// (0, 0), (0.5, 0.5), (0.75, 0.25), (0.25, 0.75), (0.375, 0.375).
	s := &sobol{v: [][32]uint32{directions(0), directions(1)}, shift: []uint32{0, 0}}
	want := [][2]float64{{0, 0}, {0.5, 0.5}, {0.75, 0.25}, {0.25, 0.75}, {0.375, 0.375}}
	for i, w := range want {
		require.Equal(t, w, [2]float64{s.at(uint32(i), 0), s.at(uint32(i), 1)}, "point %d", i)
	}
}

func TestSobolStratifies(t *testing.T) {
	// Every dimension of a (shifted) Sobol sequence puts exactly one of its
	// first 2^m points in each interval [j/2^m, (j+1)/2^m): a wrong direction
	// number breaks this.
	s := newSobol(maxSobolDims, 99)
	for d := range maxSobolDims {
		for _, m := range []uint{3, 6, 10} {
			n := uint32(1) << m
			bins := make([]int, n)
			for i := range n {
				bins[int(s.at(i, d)*float64(n))]++
			}
			for j, c := range bins {
				require.Equal(t, 1, c, "dimension %d, 2^%d points: bin %d", d+1, m, j)
			}
		}
	}
	// Dimensions 1 and 2 form a (0, m, 2)-net: one point per 1/4 x 1/4 cell
	// of the first 16.
	cells := map[[2]int]int{}
	for i := range uint32(16) {
		cells[[2]int{int(s.at(i, 0) * 4), int(s.at(i, 1) * 4)}]++
	}
	require.Len(t, cells, 16)
}

// l2Star is the L2-star discrepancy of points in [0,1)^d (Warnock's
// formula): how far the points' empirical distribution is from uniform over
// all boxes anchored at the origin. Lower is more even.
func l2Star(pts [][]float64) float64 {
	n, d := float64(len(pts)), len(pts[0])
	a := math.Pow(3, -float64(d))
	b := 0.0
	for _, x := range pts {
		p := 1.0
		for _, v := range x {
			p *= (1 - v*v) / 2
		}
		b += p
	}
	c := 0.0
	for _, x := range pts {
		for _, y := range pts {
			p := 1.0
			for k := range x {
				p *= 1 - math.Max(x[k], y[k])
			}
			c += p
		}
	}
	return math.Sqrt(a - 2*b/n + c/(n*n))
}

func unitPoints(t *testing.T, rule string, d int, seed int64, n int) [][]float64 {
	var space []plan.Parameter
	for i := range d {
		space = append(space, plan.Parameter{Name: fmt.Sprintf("x%02d", i), Kind: plan.ParamUniform, Min: 0, Max: 1})
	}
	as := draw(t, space, plan.Sampling{Algorithm: plan.SamplingRandom, Rule: rule}, seed, n)
	pts := make([][]float64, n)
	for i, a := range as {
		for _, v := range a {
			pts[i] = append(pts[i], v.Number)
		}
	}
	return pts
}

func TestSobolCoversBetterThanRandom(t *testing.T) {
	for _, d := range []int{2, 5, 10} {
		var sob, rnd float64
		const seeds = 10
		for seed := int64(1); seed <= seeds; seed++ {
			sob += l2Star(unitPoints(t, "sobol", d, seed, 256))
			rnd += l2Star(unitPoints(t, "random", d, seed, 256))
		}
		t.Logf("%d dimensions, 256 points, mean L2-star discrepancy over %d seeds: sobol %.5f, random %.5f", d, seeds, sob/seeds, rnd/seeds)
		require.Less(t, sob, rnd, "%d dimensions", d)
	}
}
