package rows

import (
	"math"
	"math/rand/v2"
)

// The helpers of package kernels' tests that this package's tests use.

func newRNG(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15)) }

// randVals returns n values uniform in [lo, hi).
func randVals(rng *rand.Rand, n int, lo, hi float64) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(lo + (hi-lo)*rng.Float64())
	}
	return v
}

// refOETF is the sRGB transfer function (linear to code), straight from
// the standard.
func refOETF(l float64) float64 {
	l = math.Max(0, math.Min(1, l))
	if l <= 0.0031308 {
		return 12.92 * l
	}
	return 1.055*math.Pow(l, 1/2.4) - 0.055
}
