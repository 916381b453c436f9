//go:build !(goexperiment.simd && amd64)

package bytemap

// Without GOEXPERIMENT=simd (or off amd64) Map's byte loop does all.

var vbmiOn = false

func mapSIMD(o, s []byte, tab *[256]byte) int { return 0 }
