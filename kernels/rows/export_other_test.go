//go:build !(goexperiment.simd && amd64)

package rows

// expSIMDExpected: no vector loops in this build.
func expSIMDExpected() bool { return false }
