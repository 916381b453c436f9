// Package cpuref is the CPU reference implementation of the compute
// device's operations: planar float32 images in host memory, the size-keyed
// pool of their buffers, and every op of kernels.Ops computed on them:
// checked, then run in parallel over fixed row bands on the loops of
// package kernels/rows. Package kernels wraps it as its CPU backend
// (kernels.CPU); callers use kernels, not this package. The conventions of
// every op (shapes, borders, determinism) are those of package kernels,
// which documents each op.
package cpuref

import "errors"

// ErrShape reports images whose sizes or channel counts do not fit an op
// (kernels.ErrShape is this error).
var ErrShape = errors.New("kernels: image shape mismatch")

// ErrForeignImage reports an Image that the device cannot use: one made
// by another backend or one that has already been freed
// (kernels.ErrForeignImage is this error).
var ErrForeignImage = errors.New("kernels: image does not belong to this device")

// Image is a planar float32 image (kernels.Image has the same methods).
type Image interface {
	Width() int
	Height() int
	Channels() int
}

// SH9 holds 9 real spherical-harmonic coefficients (see kernels.SH9).
type SH9 [9]float32

// LabStats are per-channel statistics in Reinhard's lαβ space (see
// kernels.LabStats).
type LabStats struct {
	Mean   [3]float64
	Std    [3]float64
	Weight float64 // sum of the mask weights used
}

// HueParams configure HueBound (see kernels.HueParams).
type HueParams struct {
	MaxHue, C0, C1, MaxGain float32
}

// Stats are per-channel weighted statistics (see kernels.Stats).
type Stats struct {
	Mean   []float64
	Std    []float64
	Weight float64 // sum of the weights
}

// CompositeLook are GainCompositeLook's optional low-resolution inputs
// (kernels.CompositeLook).
type CompositeLook struct {
	// FgLow and BgOldLow (3 channels) are smooth estimates of the
	// subject's colour and of the source's old background colour near the
	// matte's soft band; both or neither.
	FgLow, BgOldLow Image
	// ShadowLow (1 channel) is the darkness of a shadow on the new
	// background, which is multiplied by 1 - d: 0 is no shadow (backends
	// skip rows and spans of exact zeros, where the result is bg).
	ShadowLow Image
	// Grain (1 channel, any size, repeated over the output) is zero-mean
	// noise added to the subject (plate matching, issue 15) when
	// GrainAmount > 0: where a > 0, with n the sample of Grain at
	// ((x+GrainX) mod its width, (y+GrainY) mod its height), t =
	// a*GrainAmount*n, the composite's pixel q (3 channels, luminance
	// Y = 0.2126 q0 + 0.7152 q1 + 0.0722 q2) becomes
	//   q*max(1 + t*r, 0)^2, r = 1/sqrt(max(Y, 1e-8)) within 0.2%,
	// then capped at maxValue: sqrt(Y) becomes max(sqrt(Y) + t, 0), grain
	// of standard deviation GrainAmount*a in the square root of linear
	// luminance, shared by the channels (the hue is kept; black stays
	// black). r is the
	// exponent-halving guess 0x5f3759df - bits(Y)/2 refined by one Newton
	// step, y*(1.5 - 0.5*Y*y*y) (Y floored), the same on every backend (no square
	// root or division per pixel). Unlike the other inputs Grain is not
	// gain-sized; GrainX, GrainY >= 0. Ignored without alpha.
	Grain          Image
	GrainAmount    float32
	GrainX, GrainY int
	// PlateX, PlateY move the new background: where they are not both
	// zero, bg and bgBlur are read as Shift(bg, PlateX, PlateY) and
	// Shift(bgBlur, PlateX, PlateY) would be, bit for bit (sampled
	// bilinearly at (x + PlateX, y + PlateY), the position clamped to the
	// image; the camera lock's plate) without those images being made.
	// Both zero read them as they are. Ignored without alpha.
	PlateX, PlateY float32
	// WrapLow (3 channels, any size) is the light wrap's light of the
	// masked wrap (kernels.WrapOps.WrapLight: the plate outside the
	// matte only), sampled bilinearly as alphaBlurLow is: where given
	// (with alpha), the wrap term is wrap*a*a*w, w its sample, instead of
	// wrap*a*(1 - ab)*bgBlur (a*a: the wrap's light belongs on the
	// subject's side of the edge, so it fades faster than the matte on
	// its soft band, a < 1/2, where the composite is mostly the plate;
	// issue 31), and bgBlur and alphaBlurLow are not read
	// (either may be nil). It is made in the frame's coordinates, so
	// PlateX, PlateY do not move it. Ignored without alpha.
	WrapLow Image
	// EdgeFade (0 = none, else in (0, 1]) bounds the subject's light on
	// the matte's soft band: where 0 < a < 1, with f the subject's term
	// (the gain times the source or the estimated foreground, clamped)
	// and I the source, f becomes
	//   f - (1 - min(1, a*k))*max(0, f - I), k = 1/EdgeFade (float32),
	// so where a < EdgeFade the composite's brightening over the plain
	// composite a*I + (1-a)*bg fades as a*a/EdgeFade (darkening is
	// kept), and where a >= EdgeFade nothing changes. Ignored without
	// alpha.
	EdgeFade float32
}

// FuseParams weigh the evidence terms of MatteFuse.
type FuseParams struct {
	// Prior, Global, Local and Plate weigh the four log-odds terms.
	Prior, Global, Local, Plate float32
	// LocalSigma is the colour distance scale (same units as src) of the
	// local classifier; it must be > 0 when Local != 0.
	LocalSigma float32
	// PlateThreshold and PlateSoftness map the colour distance to the
	// clean plate to log-odds; PlateSoftness must be > 0 when Plate != 0.
	PlateThreshold, PlateSoftness float32
	// Bins is the per-channel bin count of the colour table (2..64).
	Bins int
}

// ChromaParams configure ChromaKey.
type ChromaParams struct {
	// Screen is the screen colour (the same units as src).
	Screen [3]float32
	// Channel is the screen's dominant channel: 1 green, 2 blue.
	Channel int
	// Low and High bound the ramp of the normalised key signal t (see
	// ChromaKey); 0 <= Low < High.
	Low, High float32
}
