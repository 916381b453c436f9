// Package colour holds the look's colour helpers: black-body colour,
// luminance, saturation, small vector maths and the sRGB curve. It is
// shared by render and its prompt and backdrop packages.
package colour

import (
	"math"

	"github.com/vfxrender/vfx/internal/srgb"
)

// KelvinToRGB returns the linear RGB colour of a black body at kelvin
// (Tanner Helland's fit of the blackbody locus, clamped to 1000..40000 K,
// which is close to neutral at 6500 K), normalised to Rec.709
// luminance 1.
func KelvinToRGB(kelvin float32) [3]float32 {
	t := float64(Clamp32(kelvin, 1000, 40000)) / 100
	var r, g, b float64
	if t <= 66 {
		r = 255
		g = 99.4708025861*math.Log(t) - 161.1195681661
	} else {
		r = 329.698727446 * math.Pow(t-60, -0.1332047592)
		g = 288.1221695283 * math.Pow(t-60, -0.0755148492)
	}
	switch {
	case t >= 66:
		b = 255
	case t <= 19:
		b = 0
	default:
		b = 138.5177312231*math.Log(t-10) - 305.0447927307
	}
	c := [3]float32{
		SRGBToLinear(float32(math.Min(math.Max(r, 0), 255) / 255)),
		SRGBToLinear(float32(math.Min(math.Max(g, 0), 255) / 255)),
		SRGBToLinear(float32(math.Min(math.Max(b, 0), 255) / 255)),
	}
	// Keep a trace of every channel so the normalisation is finite.
	for k := range c {
		c[k] = max(c[k], 0.002)
	}
	return NormLum(c)
}

// KelvinTint is KelvinToRGB mixed with white by amount (0 = white, 1 = the
// full blackbody colour): lights in prompts are usually meant as a tint,
// not an uncorrected cast.
func KelvinTint(kelvin, amount float32) [3]float32 {
	c := KelvinToRGB(kelvin)
	for k := range c {
		c[k] = 1 + amount*(c[k]-1)
	}
	return NormLum(c)
}

// Luminance is the Rec.709 luminance of linear RGB c.
func Luminance(c [3]float32) float32 {
	return 0.2126*c[0] + 0.7152*c[1] + 0.0722*c[2]
}

// NormLum scales c to luminance 1 (white when c is black).
func NormLum(c [3]float32) [3]float32 {
	y := Luminance(c)
	if !(y > 1e-6) {
		return [3]float32{1, 1, 1}
	}
	return [3]float32{c[0] / y, c[1] / y, c[2] / y}
}

// Desaturate mixes c with its luminance: sat 1 keeps c, 0 gives grey.
func Desaturate(c [3]float32, sat float32) [3]float32 {
	y := Luminance(c)
	for k := range c {
		c[k] = y + sat*(c[k]-y)
	}
	return c
}

// Scale3 multiplies c by s.
func Scale3(c [3]float32, s float32) [3]float32 {
	return [3]float32{c[0] * s, c[1] * s, c[2] * s}
}

// Normalize3 returns v at unit length (+z when v is 0).
func Normalize3(v [3]float32) [3]float32 {
	n := float32(math.Sqrt(float64(v[0]*v[0] + v[1]*v[1] + v[2]*v[2])))
	if !(n > 1e-12) {
		return [3]float32{0, 0, 1}
	}
	return [3]float32{v[0] / n, v[1] / n, v[2] / n}
}

// Sign32 is -1 for negative v, else 1.
func Sign32(v float32) float32 {
	if v < 0 {
		return -1
	}
	return 1
}

// Clamp32 clamps v to [lo, hi]; NaN gives lo.
func Clamp32(v, lo, hi float32) float32 {
	if v != v { // NaN
		return lo
	}
	return min(max(v, lo), hi)
}

// AppendUnique appends c to p unless it is there or p holds 16 colours.
func AppendUnique(p [][3]float32, c [3]float32) [][3]float32 {
	for _, q := range p {
		if q == c {
			return p
		}
	}
	if len(p) >= 16 {
		return p
	}
	return append(p, c)
}

// SRGBToLinear is the sRGB transfer curve's inverse (package srgb).
func SRGBToLinear(v float32) float32 { return srgb.ToLinear32(v) }

// LinearToSRGB is the sRGB transfer curve (input clamped to [0, 1]).
func LinearToSRGB(v float32) float32 { return srgb.FromLinear32(Clamp32(v, 0, 1)) }

// SRGB8ToLinear decodes an 8-bit sRGB colour to linear RGB.
func SRGB8ToLinear(c [3]uint8) [3]float32 {
	return [3]float32{SRGBToLinear(float32(c[0]) / 255), SRGBToLinear(float32(c[1]) / 255), SRGBToLinear(float32(c[2]) / 255)}
}
