//go:build goexperiment.simd && amd64

package rows

// The test helpers of this package that the external test of whole ops
// (simd_ops_amd64_test.go, which needs package cpuref) uses.
var (
	WithScalar = withScalar
	SameBits   = sameBits
	Edgy       = edgy
	NewRNG     = newRNG
	RandVals   = randVals
)

// SIMDOn reports whether the vector loops run on this CPU.
func SIMDOn() bool { return simdOn }

// expSIMDExpected reports whether ExpScaled's vector loop should run.
func expSIMDExpected() bool { return simdOn && expOn }
