package rows

import (
	"math"
	"testing"
)

// TestOETFUnclamped checks that the unclamped YUV download table agrees
// with the clamped one for every bucket (negatives, values above 1, Inf
// and NaN included).
func TestOETFUnclamped(t *testing.T) {
	l := NewLUTs()
	rng := newRNG(5)
	for k := range obuSize {
		bits := uint32(k)<<obShift | uint32(rng.IntN(1<<obShift))
		v := math.Float32frombits(bits)
		if got, want := l.OETFU[obu(v)], l.OETFB[obIdx(v)]; math.Float32bits(got) != math.Float32bits(want) {
			t.Fatalf("bits %#08x: oetfU %v, oetfB %v", bits, got, want)
		}
	}
}

// TestHtapsFixed checks the four-tap path of htaps against the general
// one, and that tables with varying tap counts are not taken for fixed.
func TestHtapsFixed(t *testing.T) {
	rng := newRNG(21)
	for _, c := range [][2]int{{480, 1920}, {5, 20}, {7, 20}, {3, 13}} {
		tx := AreaTaps(c[0], c[1])
		src := randVals(rng, c[1], -1, 2)
		got := make([]float32, c[0])
		Htaps(got, src, &tx)
		gen := tx
		gen.fixed = -1
		want := make([]float32, c[0])
		Htaps(want, src, &gen)
		for i := range got {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
				t.Fatalf("%v: out %d = %v, want %v", c, i, got[i], want[i])
			}
		}
		uniform := true
		for i := range c[0] {
			if tx.Off[i+1]-tx.Off[i] != tx.Off[1]-tx.Off[0] {
				uniform = false
			}
		}
		if uniform != (tx.fixed >= 0) {
			t.Errorf("%v: fixed = %d, uniform %v", c, tx.fixed, uniform)
		}
	}
}

func TestGrainInvSqrt(t *testing.T) {
	for v := float32(1e-8); v < 4; v *= 1.01 {
		if e := math.Abs(float64(grainInvSqrt(v))*math.Sqrt(float64(v)) - 1); e > 0.002 {
			t.Fatalf("grainInvSqrt(%g): relative error %.5f", v, e)
		}
	}
}
