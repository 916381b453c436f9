// Package srgb is the sRGB transfer curve (IEC 61966-2-1), written once
// for every package that converts between sRGB codes and linear light.
//
// The float64 and float32 forms are not interchangeable: the float32 form
// compares and divides in float32 and raises to the power in float64, and
// the codes that callers derive from it depend on that arithmetic.
package srgb

import "math"

// ToLinear is the sRGB decoding curve (EOTF): an sRGB value in [0, 1] to
// linear light.
func ToLinear(v float64) float64 {
	if v <= 0.04045 {
		return v / 12.92
	}
	return math.Pow((v+0.055)/1.055, 2.4)
}

// FromLinear is the sRGB encoding curve (OETF): linear light in [0, 1] to
// an sRGB value. Inputs are not clamped.
func FromLinear(l float64) float64 {
	if l <= 0.0031308 {
		return 12.92 * l
	}
	return 1.055*math.Pow(l, 1/2.4) - 0.055
}

// ToLinear32 is ToLinear in float32: the threshold and the linear segment
// in float32, the power in float64.
func ToLinear32(v float32) float32 {
	if v <= 0.04045 {
		return v / 12.92
	}
	return float32(math.Pow((float64(v)+0.055)/1.055, 2.4))
}

// FromLinear32 is FromLinear in float32: the threshold and the linear
// segment in float32, the power in float64. Inputs are not clamped.
func FromLinear32(v float32) float32 {
	if v <= 0.0031308 {
		return v * 12.92
	}
	return float32(1.055*math.Pow(float64(v), 1/2.4) - 0.055)
}
