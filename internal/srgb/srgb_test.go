package srgb

import (
	"math"
	"testing"
)

// The copies this package replaced, verbatim but for their names:
// kernels/cpu_convert.go (srgbEOTF, srgbOETF), matte/auto.go
// (srgbToLinear, float64), render/prompt.go (srgbToLinear, linearToSRGB,
// float32), bench/matterun.go (srgbLinear, float32) and bench/look.go
// (srgbEncode, float64). Every result must be the same to the bit.

func oldEOTF64(v float64) float64 {
	if v <= 0.04045 {
		return v / 12.92
	}
	return math.Pow((v+0.055)/1.055, 2.4)
}

func oldOETF64(l float64) float64 {
	if l <= 0.0031308 {
		return 12.92 * l
	}
	return 1.055*math.Pow(l, 1/2.4) - 0.055
}

func oldEOTF32(v float32) float32 {
	if v <= 0.04045 {
		return v / 12.92
	}
	return float32(math.Pow((float64(v)+0.055)/1.055, 2.4))
}

func oldOETF32(v float32) float32 {
	if v <= 0.0031308 {
		return v * 12.92
	}
	return float32(1.055*math.Pow(float64(v), 1/2.4) - 0.055)
}

func same64(t *testing.T, what string, x, got, want float64) {
	t.Helper()
	if math.Float64bits(got) != math.Float64bits(want) {
		t.Fatalf("%s(%v) = %v, was %v", what, x, got, want)
	}
}

func same32(t *testing.T, what string, x, got, want float32) {
	t.Helper()
	if math.Float32bits(got) != math.Float32bits(want) {
		t.Fatalf("%s(%v) = %v, was %v", what, x, got, want)
	}
}

// TestCodes compares old and new on every 8-bit code, as the callers
// build their tables (code/255), and on the render's encoding table
// (i/4095 and i/lutN-style steps).
func TestCodes(t *testing.T) {
	for i := 0; i < 256; i++ {
		v64 := float64(i) / 255
		same64(t, "ToLinear", v64, ToLinear(v64), oldEOTF64(v64))
		same64(t, "FromLinear", v64, FromLinear(v64), oldOETF64(v64))
		v32 := float32(i) / 255
		same32(t, "ToLinear32", v32, ToLinear32(v32), oldEOTF32(v32))
		same32(t, "FromLinear32", v32, FromLinear32(v32), oldOETF32(v32))
		// The 8-bit code each encoding rounds to.
		if a, b := uint8(FromLinear32(v32)*255+0.5), uint8(oldOETF32(v32)*255+0.5); a != b {
			t.Fatalf("code of %v: %d, was %d", v32, a, b)
		}
		if a, b := math.Round(255*FromLinear(v64)), math.Round(255*oldOETF64(v64)); a != b {
			t.Fatalf("code of %v: %v, was %v", v64, a, b)
		}
	}
}

// TestSweep compares old and new on a dense sweep of [-0.01, 1.01] (2^20
// steps) and on every float32 around both thresholds.
func TestSweep(t *testing.T) {
	const n = 1 << 20
	for i := 0; i <= n; i++ {
		v64 := -0.01 + 1.02*float64(i)/n
		same64(t, "ToLinear", v64, ToLinear(v64), oldEOTF64(v64))
		same64(t, "FromLinear", v64, FromLinear(v64), oldOETF64(v64))
		v32 := float32(v64)
		same32(t, "ToLinear32", v32, ToLinear32(v32), oldEOTF32(v32))
		same32(t, "FromLinear32", v32, FromLinear32(v32), oldOETF32(v32))
	}
	for _, thr := range []float32{0.04045, 0.0031308} {
		b := math.Float32bits(thr)
		for d := uint32(0); d < 4096; d++ {
			for _, v := range []float32{math.Float32frombits(b - d), math.Float32frombits(b + d)} {
				same32(t, "ToLinear32", v, ToLinear32(v), oldEOTF32(v))
				same32(t, "FromLinear32", v, FromLinear32(v), oldOETF32(v))
				same64(t, "ToLinear", float64(v), ToLinear(float64(v)), oldEOTF64(float64(v)))
				same64(t, "FromLinear", float64(v), FromLinear(float64(v)), oldOETF64(float64(v)))
			}
		}
	}
}
