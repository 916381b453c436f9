package rows

import (
	"fmt"
	"math"
	"testing"
)

// TestExpScaled checks ExpScaled against math.Exp bit for bit: a
// softmax's scaled differences at the memory's temperatures and others,
// arguments across and at the edges of [-700, 700] (where the vector loop
// hands the block to math.Exp) and beyond (underflow to denormals and 0,
// overflow to +Inf), NaN, infinities, signed zeros, and every tail length.
// Values below the cut are 0 (cuts that leave out none, some of a block,
// all). With AVX2 and FMA (GOEXPERIMENT=simd) it also checks that the
// vector loop ran.
func TestExpScaled(t *testing.T) {
	rng := newRNG(5)
	check := func(what string, s []float32, m, tau, cut float32) {
		t.Helper()
		out := make([]float64, len(s))
		for i := range out {
			out[i] = 42
		}
		ExpScaled(out, s, m, tau, cut)
		for e, v := range out {
			want := math.Exp(float64((s[e] - m) / tau))
			if s[e] < cut {
				want = 0
			}
			if math.Float64bits(v) != math.Float64bits(want) && !(v != v && want != want) {
				t.Fatalf("%s: value %d: exp((%v - %v) / %v) = %v (%#x), want %v (%#x)", what, e, s[e], m, tau, v, math.Float64bits(v), want, math.Float64bits(want))
			}
		}
	}
	for _, tau := range []float32{0.02, 0.05, 0.1, 1, 1e-3, 7} {
		for _, n := range []int{0, 1, 7, 8, 9, 15, 16, 17, 2048} {
			s := randVals(rng, n, -1, 1)
			m := float32(-1)
			for _, v := range s {
				m = max(m, v)
			}
			check(fmt.Sprintf("tau %v, %d values", tau, n), s, m, tau, float32(math.Inf(-1)))
			// The memory's cut (15 temperatures below the best), a cut
			// that leaves all out, and one in the middle (mixed blocks).
			check(fmt.Sprintf("tau %v, %d values, cut", tau, n), s, m, tau, m-15*tau)
			check(fmt.Sprintf("tau %v, %d values, cut all", tau, n), s, m, tau, 2)
			check(fmt.Sprintf("tau %v, %d values, cut half", tau, n), s, m, tau, 0)
		}
	}
	// Arguments straight (m 0, tau 1): a sweep of [-760, 760], the edges of
	// the vector path and of math.Exp's, and special values.
	var s []float32
	for x := -760.0; x <= 760; x += 0.37 {
		s = append(s, float32(x))
	}
	for _, x := range []float64{-700, 700, -699.99994, 699.99994, -700.00006, 700.00006, -708.4, -708.39642, -709.1, -744.4, -745.2, -746,
		709.78, 709.79, 710, 0, math.Copysign(0, -1), 1e-40, -1e-40, 1e-30, -1e-30, 0.5, -0.5, 1, -1,
		math.NaN(), math.Inf(1), math.Inf(-1), 3e38, -3e38} {
		s = append(s, float32(x))
	}
	for range 100000 {
		s = append(s, float32(-40+50*rng.Float64()))
	}
	for range 20000 {
		s = append(s, float32(-700+1400*rng.Float64()))
	}
	inf := float32(math.Inf(-1))
	check("sweep", s, 0, 1, inf)
	check("sweep, cut", s, 0, 1, -5)
	for off := range 8 { // the specials in every lane of a block
		check(fmt.Sprintf("sweep from %d", off), s[off:], 0, 1, inf)
	}
	check("m NaN", randVals(rng, 24, -1, 1), float32(math.NaN()), 0.1, inf)
	check("cut NaN", randVals(rng, 24, -1, 1), 1, 0.1, float32(math.NaN()))
	check("tau 0", randVals(rng, 24, -1, 1), 1, 0, inf)
	if expSIMDExpected() {
		out := make([]float64, 16)
		if n := expScaledSIMD(out, randVals(rng, 16, -1, 0), 0, 0.1, -2); n != 16 {
			t.Errorf("the vector loop did %d of 16 values on a CPU with AVX2 and FMA", n)
		}
	}
}

// BenchmarkExpScaled is one query's weights at one temperature in the
// memory's read: 2048 remembered cells.
func BenchmarkExpScaled(b *testing.B) {
	rng := newRNG(3)
	s, out := randVals(rng, 2048, -1, 1), make([]float64, 2048)
	for b.Loop() {
		ExpScaled(out, s, 1, 0.05, 1-15*0.05)
	}
}
