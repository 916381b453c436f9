package kernels

import "github.com/vfxrender/vfx/kernels/cpuref"

// WrapOps is the masked light wrap's op (issue 31 item 3: the wrap's
// light comes from the plate outside the matte only, so no plate pixel
// hidden behind the subject or far from its edge reaches inside). It is a
// separate interface from Ops so that adding it touches no existing op;
// both backends implement it.
type WrapOps interface {
	// WrapLight writes the light wrap's light (3 channels)
	//   dst = held * (1 - band) / max(1 - wide, eps)
	// per pixel (a NaN 1 - wide counts as eps): held (3 channels) is
	// the plate held out by the matte and blurred, blur(P·(1 - A)); wide
	// (1 channel) the matte under the same blur, blur(A), so 1 - wide is
	// blur(1 - A) for a blur that keeps constants and held / (1 - wide)
	// the plate's mean over its visible pixels near each pixel (a
	// normalised masked blur); band (1 channel) is the wrap's band, the
	// matte blurred by the wrap's width. Where 1 - wide < eps the light
	// is darkened rather than amplified: with held <= max(P)·(1 - wide)
	// the result never exceeds max(P)·(1 - band) for any eps. All of
	// one size; dst may be held; eps finite and > 0. The result is
	// bit-identical on every backend.
	WrapLight(dst, held, wide, band Image, eps float32) error
}

var _ WrapOps = (*CPU)(nil)

// wrapLightArgs checks WrapLight's eps.
func wrapLightArgs(eps float32) bool { return cpuref.WrapLightArgs(eps) }

// WrapLight: see WrapOps.WrapLight.
func (d *CPU) WrapLight(dst, held, wide, band Image, eps float32) error {
	return d.ref.WrapLight(dst, held, wide, band, eps)
}
