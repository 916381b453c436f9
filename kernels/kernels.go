// Package kernels is the compute device of vfx: images that live where the
// device computes (host slices for the CPU backend, device memory for
// CUDA), the transfers in and out of it, and every per-pixel operation the
// render and matte packages need.
//
// Conventions for every backend:
//   - Images are planar float32, channel-major. Colour images are 3
//     channels of linear-light RGB (sRGB primaries); mattes, luminance,
//     distances and similar are 1 channel.
//   - Ops take the destination first. Unless an op says otherwise, dst and
//     its inputs have equal width and height, and dst may not alias an
//     input. A shape mismatch is an error wrapping ErrShape; an op never
//     panics on bad shapes.
//   - Borders clamp to the edge (no wrap, no zero padding).
//   - Ops are deterministic: the same inputs give bit-identical output on
//     the same backend, whatever the worker count.
//   - Reductions accumulate in float64.
package kernels

import (
	"github.com/vfxrender/vfx/frame"
	"github.com/vfxrender/vfx/kernels/cpuref"
)

// ErrShape reports images whose sizes or channel counts do not fit an op.
var ErrShape = cpuref.ErrShape

// ErrForeignImage reports an Image that the device cannot use: one made by
// another backend (a CUDA image handed to the CPU device, say) or one that
// has already been freed. CPU images live in host memory, so any CPU
// device accepts the images of any other CPU device.
var ErrForeignImage = cpuref.ErrForeignImage

// Image is a planar float32 image resident on a Device. It is only
// meaningful to the Device that created it.
type Image interface {
	Width() int
	Height() int
	Channels() int
}

// SH9 holds the 9 real spherical-harmonic coefficients of bands 0..2 in
// the order Y00, Y1-1, Y10, Y11, Y2-2, Y2-1, Y20, Y21, Y22 (the
// Ramamoorthi-Hanrahan ordering, directions (x right, y up, z toward the
// camera)).
type SH9 = cpuref.SH9

// PlateCodes is the new background converted once into the output's
// format, for GainCompositeLookFrame to copy (see cpuref.PlateCodes): set
// Frame to the Download of bg and keep one PlateCodes per bg.
type PlateCodes = cpuref.PlateCodes

// LabStats are per-channel statistics of an image in Reinhard's lαβ space
// (computed from linear RGB via LMS and the natural logarithm).
type LabStats = cpuref.LabStats

// HueParams configure HueBound: the largest hue rotation (radians) of a
// pixel whose reference has a relative chroma of at least C1 (see
// HueBound), none bounded at C0 or below, and the largest gain written.
type HueParams = cpuref.HueParams

// Stats are per-channel weighted statistics.
//
//	Mean, Std []float64
//	Weight    float64 // sum of the weights
type Stats = cpuref.Stats

// Device is a compute backend. A Device is safe for use by one goroutine
// at a time per image; distinct images may be processed concurrently.
type Device interface {
	// Name identifies the backend ("cpu", "cuda:0").
	Name() string
	// NewImage allocates a zeroed w x h image with 1 or 3 channels
	// (other counts up to 4 are allowed for scratch use).
	NewImage(w, h, channels int) (Image, error)
	// Free returns an image to the device's pool. Free(nil) is a no-op;
	// the image must not be used afterwards.
	Free(img Image)
	// Upload converts a host frame into dst: YUV420P (with the frame's
	// matrix and range) and RGB24 become 3-channel linear RGB through the
	// sRGB transfer curve; Gray8 becomes 1 channel in [0,1] with no curve.
	// dst must match the frame's size.
	Upload(dst Image, src *frame.HostFrame) error
	// Download converts src into the host frame dst, whose Format, Width,
	// Height, ColorSpace and FullRange are set by the caller and whose
	// planes are allocated: 3-channel linear RGB to YUV420P or RGB24 via
	// the sRGB curve (values clamped to [0,1]); 1 channel to Gray8.
	Download(dst *frame.HostFrame, src Image) error
	// ReadPixels copies src to the host, planar, channel-major.
	ReadPixels(src Image) ([]float32, error)
	// ReadPixelsTo is ReadPixels into dst's memory when its capacity
	// holds src (else into a new slice): it returns dst[:n] holding
	// src's n values. Per-frame read-backs keep one buffer for the job.
	ReadPixelsTo(dst []float32, src Image) ([]float32, error)
	// WritePixels copies planar, channel-major host data into dst.
	WritePixels(dst Image, data []float32) error
	// Ops returns the operations of this device.
	Ops() Ops
	// Close releases every resource of the device. It is idempotent.
	Close() error
}

// Ops are the compute operations of a Device.
type Ops interface {
	ScaleOps
	MatteOps

	// Fill sets every pixel of channel c to v[c].
	Fill(dst Image, v []float32) error
	// Copy copies src into dst.
	Copy(dst, src Image) error
	// Luma writes the Rec.709 luminance of a 3-channel image into a
	// 1-channel dst.
	Luma(dst, src Image) error

	// ResizeBilinear resamples src to dst's size (channels equal) with
	// bilinear interpolation, pixel centres aligned.
	ResizeBilinear(dst, src Image) error
	// ResizeArea downsamples src to dst's size by exact area averaging
	// (box coverage). dst must not be larger than src in either axis.
	ResizeArea(dst, src Image) error
	// ResizeLanczos3 resamples src to dst's size with a separable
	// Lanczos-3 filter, widened by the scale factor when downsampling.
	ResizeLanczos3(dst, src Image) error
	// CoverFit scales src uniformly (Lanczos-3) so that it covers dst and
	// crops the overflow equally on both sides.
	CoverFit(dst, src Image) error

	// GaussianBlur applies a separable Gaussian of standard deviation
	// sigma (pixels; radius ceil(3 sigma)). sigma <= 0 copies.
	GaussianBlur(dst, src Image, sigma float32) error
	// BoxFilter writes the mean over the (2r+1)^2 window clipped to the
	// image (divided by the number of pixels inside it).
	BoxFilter(dst, src Image, r int) error
	// GuidedFilter is He et al.'s guided filter with a 1-channel guide:
	// each channel of src is filtered with window radius r and
	// regulariser eps.
	GuidedFilter(dst, guide, src Image, r int, eps float32) error
	// GuidedFilterColour is He et al.'s guided filter with a 3-channel
	// (colour) guide: a = (Σ + eps·U)⁻¹ cov(I,p) over each window of
	// radius r, so an edge of hue that luma does not show still steers
	// the filter. A src smaller than guide and dst is the fast guided
	// filter: the coefficients at src's size (r in its pixels) on the
	// guide area-downsampled to it, upsampled bilinearly and applied to
	// the full-size guide. dst may equal src, not guide.
	GuidedFilterColour(dst, guide, src Image, r int, eps float32) error

	// Composite writes dst = a*fg + (1-a)*bg per channel; alpha is
	// 1 channel. A nil alpha means a = 1.
	Composite(dst, fg, bg, alpha Image) error
	// LightWrap writes dst = comp + strength * a * (1 - aBlur) * bgBlur,
	// where alpha and alphaBlur are 1 channel: background light spilling
	// over the inside edge of the subject.
	LightWrap(dst, comp, bgBlur, alpha, alphaBlur Image, strength float32) error

	// Sum returns the sum of each channel.
	Sum(src Image) ([]float64, error)
	// MaskedStats returns per-channel mean and standard deviation weighted
	// by a 1-channel mask (nil mask = weight 1). With zero total weight the
	// mean and std are 0.
	MaskedStats(src, mask Image) (Stats, error)

	// SHProjectEnv projects a 3-channel radiance image onto SH9 per
	// channel. Pixel (x, y) of a W x H image maps to azimuth
	// theta = ((x+0.5)/W - 0.5)*pi and elevation phi = (0.5-(y+0.5)/H)*pi,
	// direction d = (sin(theta)cos(phi), sin(phi), -cos(theta)cos(phi)):
	// the hemisphere behind the subject, seen by the camera. The mirrored
	// front hemisphere (dx, dy, -dz) receives the same radiance times
	// front. Each pixel's solid angle is cos(phi)*(pi/W)*(pi/H).
	// Returns radiance coefficients L_lm (no cosine-lobe convolution).
	SHProjectEnv(src Image, front float32) ([3]SH9, error)
	// SHNormalEquations accumulates the weighted least-squares system
	// for fitting SH9 shading to a 1-channel signal over unit normals:
	// ata = sum w * Y(n) Y(n)^T (9x9, row-major), atb = sum w * Y(n) s.
	// normals is 3 channels; mask is 1 channel (nil = weight 1).
	SHNormalEquations(signal, normals, mask Image) (ata [81]float64, atb [9]float64, err error)
	// SHEval writes, for each channel c of dst, sum_k coeffs[c][k] *
	// Y_k(n) where n is the normal image (3 channels). len(coeffs) must
	// equal dst's channels.
	SHEval(dst, normals Image, coeffs []SH9) error

	// RatioRelight writes dst = src * (1 + a*(g - 1)) per channel where
	// g = clamp(eNew / max(eOld, eps), 0, maxGain). eOld has 1 channel or
	// as many as eNew; eNew has 1 channel or as many as src; alpha is 1
	// channel (nil = 1).
	RatioRelight(dst, src, eNew, eOld, alpha Image, eps, maxGain float32) error
	// LabStats returns the mask-weighted lαβ statistics of a 3-channel
	// linear RGB image (nil mask = weight 1). Values are floored at 1e-4
	// before the logarithm.
	LabStats(src, mask Image) (LabStats, error)
	// LabTransfer is Reinhard's colour transfer: in lαβ, each channel is
	// moved from the statistics from to the statistics to
	// ((v - from.Mean)*to.Std/from.Std + to.Mean; a zero from.Std keeps
	// the scale 1) and blended with the original by strength * mask
	// (nil mask = 1), then converted back to linear RGB.
	LabTransfer(dst, src, mask Image, from, to LabStats, strength float32) error
	// HueBound bounds the hue rotation of a gain: out = ref * gain (per
	// channel; ref and gain 3-channel of dst's size) is compared with ref
	// in the opponent plane a = 500 (X/Xn - Y), b = 200 (Y - Z/Zn) of
	// linear sRGB (D65; CIELAB's a*, b* to first order about grey, the
	// same hue angle there): where the angle between out's and ref's
	// (a, b) exceeds the allowed angle, out's vector is turned back to
	// that angle from ref's, its length and Y kept (so a gain that moves
	// white balance and exposure tints, one that turns a coloured pixel's
	// hue does not), and dst = out' / ref per channel, clamped to
	// [0, p.MaxGain]; a channel where ref is at most 1e-4 keeps its gain.
	// The allowed angle is p.MaxHue where ref's relative chroma
	// |(a, b)| / Y is >= p.C1, any (π) where it is <= p.C0 (or Y <= 0),
	// and in between π - t*(π - MaxHue) with t the smoothstep of the
	// chroma from C0 to C1: grey pixels have no hue to keep. A pixel
	// within the bound, or where mask (1 channel, nil = everywhere) is 0,
	// keeps its gain exactly. dst may equal gain; ref and mask must not
	// alias dst. Needs 0 <= MaxHue <= π, 0 <= C0 < C1 and MaxGain > 0
	// (finite).
	HueBound(dst, gain, ref, mask Image, p HueParams) error

	// DistanceTransform writes the exact Euclidean distance (pixels) from
	// each pixel whose mask value is >= threshold to the nearest pixel
	// whose value is < threshold; those pixels get 0. The outside of the
	// image does not count as background. With no background pixel at
	// all, every pixel gets Width+Height.
	DistanceTransform(dst, mask Image, threshold float32) error
	// NormalsFromMatte writes unit normals (3 channels, x right, y up, z
	// toward the camera) of the inflated surface
	// h = radius * sqrt(1 - (1 - min(dist/radius, 1))^2), plus
	// detailStrength times the 1-channel detail image (nil = none), by
	// central differences: n ~ (-dh/dx, +dh/dy, 1). Where dist is 0 the
	// normal is (0, 0, 1).
	NormalsFromMatte(dst, dist, detail Image, radius, detailStrength float32) error

	// GainComposite is the fused full-resolution finishing pass:
	//   g   = bilinear sample of gainLow (3 channels, any size)
	//   ab  = bilinear sample of alphaBlurLow (1 channel, any size)
	//   f   = clamp(src * g, 0, maxValue)
	//   dst = a*f + (1-a)*bg + wrap * a * (1 - ab) * bgBlur
	// alpha is 1 channel at full size (nil = 1, then bg, bgBlur and
	// alphaBlurLow may be nil); bg and bgBlur are 3 channels at full size.
	// Where a == 0 the result is bg exactly and where a == 1 it does not
	// depend on bg (for finite inputs), so backends may skip reading the
	// inputs that do not contribute.
	GainComposite(dst, src, alpha, gainLow, bg, bgBlur, alphaBlurLow Image, wrap, maxValue float32) error
	// GainCompositeDownload is GainComposite into a 3-channel image of
	// dst's size followed by Download of that image into the host frame
	// dst (YUV420P or RGB24), with the same result, without the
	// full-resolution intermediate image.
	GainCompositeDownload(dst *frame.HostFrame, src, alpha, gainLow, bg, bgBlur, alphaBlurLow Image, wrap, maxValue float32) error
	// GainCompositeLook is GainComposite with the optional inputs of look
	// (each nil or of gainLow's size, sampled bilinearly like the gain).
	// With alpha set and look.FgLow and look.BgOldLow given, where
	// 0 < a < 1 the source is replaced by the estimated foreground
	//   F = clamp(fm + a*(I - a*fm - (1-a)*bm) / (a*a + (1-a)*(1-a)), 0, maxValue)
	// (fm, bm the samples of FgLow and BgOldLow, I the source): the
	// least-change split of I = a*F + (1-a)*B around the smooth estimates
	// (the per-pixel step of Germer et al.'s multi-level foreground
	// estimation). With look.ShadowLow given, bg is multiplied by
	// (1 - d), d its sample, wherever a < 1: where a == 0 the result is
	// bg*(1-d). Without alpha, look is ignored. With a zero look it
	// equals GainComposite.
	GainCompositeLook(dst, src, alpha, gainLow, bg, bgBlur, alphaBlurLow Image, look CompositeLook, wrap, maxValue float32) error
	// GainCompositeLookDownload is GainCompositeLook followed by Download
	// into dst, as GainCompositeDownload is for GainComposite.
	GainCompositeLookDownload(dst *frame.HostFrame, src, alpha, gainLow, bg, bgBlur, alphaBlurLow Image, look CompositeLook, wrap, maxValue float32) error

	// ResizeAreaFrame is Upload of the host frame src into an image of
	// its size followed by ResizeArea into dst, with the same result:
	// the low-resolution copy of a decoded frame without its
	// full-resolution float image.
	ResizeAreaFrame(dst Image, src *frame.HostFrame) error
	// GainCompositeLookFrame is GainCompositeLookDownload with the
	// source (YUV420P or RGB24) and the matte (Gray8; nil = no matte,
	// then as GainCompositeDownload) given as host frames, with the same
	// result as uploading them first. pc, when not nil, holds the
	// Download of bg into a frame of dst's format, size, colour space and
	// range (PlateCodes): backends may copy its codes where the output is
	// bg exactly (zero matte, no shadow), at the moved position when
	// look.PlateX and PlateY are whole numbers; it is ignored when it does
	// not fit dst.
	GainCompositeLookFrame(dst, src, alpha *frame.HostFrame, pc *PlateCodes, gainLow, bg, bgBlur, alphaBlurLow Image, look CompositeLook, wrap, maxValue float32) error
}

// CompositeLook are GainCompositeLook's optional low-resolution inputs:
// FgLow and BgOldLow (the subject's and the old background's colour near
// the soft band), ShadowLow (a shadow on the new background), Grain,
// GrainAmount, GrainX, GrainY (plate-matching grain), PlateX, PlateY (the
// camera lock's plate offset) and WrapLow (the masked light wrap's
// light, WrapOps.WrapLight); each field is documented at its definition,
// cpuref.CompositeLook.
type CompositeLook = cpuref.CompositeLook

// PoolTrimmer is implemented by a Device that keeps freed host memory for
// reuse (the CPU backend): TrimPool lets the Go heap reclaim it after a
// one-off use of large images, so that a job's live heap stays what its
// memory limit (worker.Plan.HeapBytes) expects.
type PoolTrimmer interface {
	TrimPool()
}
