package kernels

import (
	"github.com/vfxrender/vfx/frame"
	"github.com/vfxrender/vfx/kernels/cpuref"
)

var (
	_ Device      = (*CPU)(nil)
	_ Ops         = (*CPU)(nil)
	_ PoolTrimmer = (*CPU)(nil)
)

// CPU is the pure-Go reference backend. Every op is parallel over fixed
// row bands (band boundaries depend only on the image size, never on the
// worker count), so results are bit-identical for any worker count.
// A CPU is safe for concurrent use on distinct images. Scratch buffers
// and freed images go to a size-keyed pool (capped at 1 GiB).
//
// Its ops are computed by package kernels/cpuref (the images, their pool
// and the row bands) on the loops of package kernels/rows (scalar and
// AVX2); each method here is that op.
type CPU struct {
	ref *cpuref.CPU
}

// NewCPU returns a CPU device that uses up to workers goroutines per op
// (workers <= 0 means runtime.GOMAXPROCS(0)). It builds its conversion
// tables once here; it never fails.
func NewCPU(workers int) *CPU { return &CPU{ref: cpuref.NewCPU(workers)} }

// Name returns "cpu".
func (d *CPU) Name() string { return "cpu" }

// Ops returns d itself.
func (d *CPU) Ops() Ops { return d }

// AddGrain adds the subject's grain (see GrainOps.AddGrain).
func (d *CPU) AddGrain(dst, src, alpha Image, seed uint32, amount float32) error {
	return d.ref.AddGrain(dst, src, alpha, seed, amount)
}

// BoxFilter writes the mean over the (2r+1)^2 window clipped to the image
// (see Ops.BoxFilter), in O(1) per pixel with float64 running sums.
// r <= 0 copies. dst may equal src.
func (d *CPU) BoxFilter(dst, src Image, r int) error { return d.ref.BoxFilter(dst, src, r) }

// ChromaKey keys a coloured screen with despill (see MatteOps.ChromaKey).
func (d *CPU) ChromaKey(alpha, dst, src Image, p ChromaParams) error {
	return d.ref.ChromaKey(alpha, dst, src, p)
}

// Close drops the device's pooled buffers; afterwards NewImage fails.
// Images already allocated stay usable. Close is idempotent and always
// returns nil.
func (d *CPU) Close() error { return d.ref.Close() }

// ColourHistogram returns a weighted colour histogram (see
// MatteOps.ColourHistogram).
func (d *CPU) ColourHistogram(src, weight Image, bins int) ([]float64, error) {
	return d.ref.ColourHistogram(src, weight, bins)
}

// Composite writes dst = a*fg + (1-a)*bg (see Ops.Composite). fg, bg and
// dst have equal shapes; alpha is 1 channel (nil = 1, then bg may be nil
// too).
func (d *CPU) Composite(dst, fg, bg, alpha Image) error { return d.ref.Composite(dst, fg, bg, alpha) }

// Copy copies src into dst; shapes must be equal (else ErrShape).
func (d *CPU) Copy(dst, src Image) error { return d.ref.Copy(dst, src) }

// CoverFit scales src uniformly with Lanczos-3 so that it covers dst and
// crops the overflow equally on both sides (see Ops.CoverFit). The scaled
// size is not rounded: the crop may be a fraction of a pixel, so the
// centre of src always lands on the centre of dst.
func (d *CPU) CoverFit(dst, src Image) error { return d.ref.CoverFit(dst, src) }

// DistanceTransform writes the exact Euclidean distance from each pixel
// with mask >= threshold to the nearest pixel with mask < threshold (see
// Ops.DistanceTransform). Pass 1 computes, per column, the distance to the
// nearest background pixel in that column by two linear scans (parallel
// over column blocks, row-major memory order); pass 2 is the
// Felzenszwalb-Huttenlocher lower envelope of parabolas along each row
// (parallel over row bands). All arithmetic on squared distances is exact.
// dst may equal mask.
func (d *CPU) DistanceTransform(dst, mask Image, threshold float32) error {
	return d.ref.DistanceTransform(dst, mask, threshold)
}

// Download converts src into dst (see Device.Download). Errors: an
// invalid frame, a foreign image, or a size/channel mismatch (ErrShape).
func (d *CPU) Download(dst *frame.HostFrame, src Image) error { return d.ref.Download(dst, src) }

// Fill sets every pixel of channel c to v[c]; len(v) must equal dst's
// channel count (else ErrShape).
func (d *CPU) Fill(dst Image, v []float32) error { return d.ref.Fill(dst, v) }

// FlowConfidence writes forward–backward consistency (see
// MatteOps.FlowConfidence).
func (d *CPU) FlowConfidence(dst, fwd, bwd Image, sigma float32) error {
	return d.ref.FlowConfidence(dst, fwd, bwd, sigma)
}

// FlowMismatch writes the mismatch products (see MatteOps.FlowMismatch).
func (d *CPU) FlowMismatch(dst, grad, ref, warped Image) error {
	return d.ref.FlowMismatch(dst, grad, ref, warped)
}

// FlowSolve takes one regularised Lucas–Kanade step (see
// MatteOps.FlowSolve).
func (d *CPU) FlowSolve(flow, tensor, mismatch Image, lambda, maxStep, scale float32) error {
	return d.ref.FlowSolve(flow, tensor, mismatch, lambda, maxStep, scale)
}

// FlowTensor writes the structure products (see MatteOps.FlowTensor).
func (d *CPU) FlowTensor(dst, grad Image) error { return d.ref.FlowTensor(dst, grad) }

// Free returns img's buffer to the device's pool. Free(nil), a second
// Free and an image of another device are no-ops.
func (d *CPU) Free(img Image) { d.ref.Free(img) }

// GainComposite is the fused finishing pass (see Ops.GainComposite). The
// gain and alphaBlur samples are bit-identical to ResizeBilinear's, and
// the arithmetic follows the separate clamp, Composite and LightWrap
// order. With alpha nil the light-wrap term is added (with a = 1) only
// when bgBlur and alphaBlurLow are both given; with alpha set, bg is
// required and the wrap term is skipped when bgBlur or alphaBlurLow is
// nil.
//
// With alpha set, pixels are processed in runs along each row: where
// a == 0 dst is a copy of bg (src, the gain, bgBlur and the wrap matte
// are not read), where a == 1 bg is not read. For finite inputs this is
// bit-identical to evaluating the formula everywhere.
func (d *CPU) GainComposite(dst, src, alpha, gainLow, bg, bgBlur, alphaBlurLow Image, wrap, maxValue float32) error {
	return d.ref.GainComposite(dst, src, alpha, gainLow, bg, bgBlur, alphaBlurLow, wrap, maxValue)
}

// GainCompositeDownload is GainComposite into a temporary image followed
// by Download of it into dst (see Ops.GainCompositeDownload), in one pass
// over two-row strips: the full-resolution float result is never
// written to memory. The output is bit-identical to the two-op chain.
func (d *CPU) GainCompositeDownload(dst *frame.HostFrame, src, alpha, gainLow, bg, bgBlur, alphaBlurLow Image, wrap, maxValue float32) error {
	return d.ref.GainCompositeDownload(dst, src, alpha, gainLow, bg, bgBlur, alphaBlurLow, wrap, maxValue)
}

// GainCompositeLook is GainComposite with foreground estimation in the
// soft band and a shadow on the background (see Ops.GainCompositeLook).
func (d *CPU) GainCompositeLook(dst, src, alpha, gainLow, bg, bgBlur, alphaBlurLow Image, look CompositeLook, wrap, maxValue float32) error {
	return d.ref.GainCompositeLook(dst, src, alpha, gainLow, bg, bgBlur, alphaBlurLow, look, wrap, maxValue)
}

// GainCompositeLookDownload is GainCompositeLook into a temporary image
// followed by Download (see Ops.GainCompositeLookDownload).
func (d *CPU) GainCompositeLookDownload(dst *frame.HostFrame, src, alpha, gainLow, bg, bgBlur, alphaBlurLow Image, look CompositeLook, wrap, maxValue float32) error {
	return d.ref.GainCompositeLookDownload(dst, src, alpha, gainLow, bg, bgBlur, alphaBlurLow, look, wrap, maxValue)
}

// GainCompositeLookFrame is GainCompositeLookDownload with the source and
// the matte given as host frames (see Ops.GainCompositeLookFrame): each
// row band converts only the matte and the source pixels under a nonzero
// matte. With pc (PlateCodes: the Download of bg into a frame of dst's
// format, colour space and range), 2x2 blocks that are background only
// (zero matte, no shadow) are copied from it instead of being converted
// again, also where the plate is moved by whole pixels.
// The output is bit-identical to Upload of src and alpha followed by
// GainCompositeLookDownload.
func (d *CPU) GainCompositeLookFrame(dst, src, alpha *frame.HostFrame, pc *PlateCodes, gainLow, bg, bgBlur, alphaBlurLow Image, look CompositeLook, wrap, maxValue float32) error {
	return d.ref.GainCompositeLookFrame(dst, src, alpha, pc, gainLow, bg, bgBlur, alphaBlurLow, look, wrap, maxValue)
}

// GaussianBlur applies a separable, normalised Gaussian of standard
// deviation sigma with radius ceil(3 sigma), edges clamped (see
// Ops.GaussianBlur). sigma <= 0 copies. dst may equal src.
func (d *CPU) GaussianBlur(dst, src Image, sigma float32) error {
	return d.ref.GaussianBlur(dst, src, sigma)
}

// Gradient writes central differences (see MatteOps.Gradient).
func (d *CPU) Gradient(dst, src Image) error { return d.ref.Gradient(dst, src) }

// GuidedFilter is He et al.'s guided filter with a 1-channel guide I (see
// Ops.GuidedFilter): per channel p of src, with box means of radius r,
// a = cov(I,p)/(var(I)+eps), b = mean(p) - a*mean(I), and
// dst = mean(a)*I + mean(b). The a/b step is computed in float64, with
// var(I) floored at 0 and a = 0 where var(I)+eps is not positive (eps <= 0
// on a flat guide). dst may equal src or guide.
func (d *CPU) GuidedFilter(dst, guide, src Image, r int, eps float32) error {
	return d.ref.GuidedFilter(dst, guide, src, r, eps)
}

// GuidedFilterColour is He et al.'s guided filter with a 3-channel
// guide (see Ops.GuidedFilterColour and cpuref's GuidedFilterColour).
func (d *CPU) GuidedFilterColour(dst, guide, src Image, r int, eps float32) error {
	return d.ref.GuidedFilterColour(dst, guide, src, r, eps)
}

// HueBound bounds the hue rotation of a gain (see Ops.HueBound).
func (d *CPU) HueBound(dst, gain, ref, mask Image, p HueParams) error {
	return d.ref.HueBound(dst, gain, ref, mask, p)
}

// LabStats returns mask-weighted lαβ mean and std of a 3-channel linear
// RGB image (see Ops.LabStats); nil mask = weight 1, pixels of weight 0
// are skipped. Zero total weight gives zero statistics.
func (d *CPU) LabStats(src, mask Image) (LabStats, error) { return d.ref.LabStats(src, mask) }

// LabTransfer is Reinhard's colour transfer (see Ops.LabTransfer). With
// k = strength*mask, the blended lαβ is lab + k*((s-1)*lab + to.Mean -
// s*from.Mean) (s = to.Std/from.Std), which in log-LMS is
// L' = L + k*(P*L + q) with P = A^-1 diag(s-1) A and q = A^-1 o, composed
// once per call. The result is applied as a change of LMS:
// rgb' = rgb + M^-1 (exp(L') - max(M*rgb, 1e-4)), which equals
// M^-1 exp(L') wherever M*rgb is above the floor, and leaves a pixel
// exactly unchanged where k = 0 (so a zero mask or strength is an exact
// copy, and from == to is the identity even for black pixels).
// dst may equal src.
func (d *CPU) LabTransfer(dst, src, mask Image, from, to LabStats, strength float32) error {
	return d.ref.LabTransfer(dst, src, mask, from, to, strength)
}

// LightWrap writes dst = comp + strength*a*(1-aBlur)*bgBlur (see
// Ops.LightWrap). comp, bgBlur and dst have equal shapes; alpha and
// alphaBlur are 1 channel.
func (d *CPU) LightWrap(dst, comp, bgBlur, alpha, alphaBlur Image, strength float32) error {
	return d.ref.LightWrap(dst, comp, bgBlur, alpha, alphaBlur, strength)
}

// Luma writes 0.2126 R + 0.7152 G + 0.0722 B of the 3-channel src into the
// 1-channel dst.
func (d *CPU) Luma(dst, src Image) error { return d.ref.Luma(dst, src) }

// MaskedStats returns per-channel mean and (population) standard
// deviation weighted by the 1-channel mask (nil = weight 1), see
// Ops.MaskedStats. Sums are float64 (one pass, E[v^2]-mean^2 floored at
// 0). A total weight <= 0 gives zero means and stds.
func (d *CPU) MaskedStats(src, mask Image) (Stats, error) { return d.ref.MaskedStats(src, mask) }

// MatteFuse combines the evidence into a matte (see MatteOps.MatteFuse).
func (d *CPU) MatteFuse(dst, src, prior, conf, localFg, localBg, localM, plate Image, table []float32, p FuseParams) error {
	return d.ref.MatteFuse(dst, src, prior, conf, localFg, localBg, localM, plate, table, p)
}

// NewImage allocates a zeroed w x h image with 1 to 4 channels. It fails
// with an error wrapping ErrShape for a non-positive or oversized shape,
// and fails after Close.
func (d *CPU) NewImage(w, h, channels int) (Image, error) { return d.ref.NewImage(w, h, channels) }

// NormalsFromMatte writes unit normals of the inflated surface
// h = radius*sqrt(1-(1-min(dist/radius,1))^2) + detailStrength*detail by
// clamped central differences, n ~ (-dh/dx, +dh/dy, 1) with y the row
// index (see Ops.NormalsFromMatte); pixels with dist <= 0 get (0, 0, 1).
// radius <= 0 drops the inflation term. dst is 3 channels; dist and
// detail are 1 channel.
func (d *CPU) NormalsFromMatte(dst, dist, detail Image, radius, detailStrength float32) error {
	return d.ref.NormalsFromMatte(dst, dist, detail, radius, detailStrength)
}

// RatioRelight writes dst = src*(1 + a*(g-1)) with
// g = clamp(eNew/max(eOld, eps), 0, maxGain) (see Ops.RatioRelight). A NaN
// ratio counts as 0.
func (d *CPU) RatioRelight(dst, src, eNew, eOld, alpha Image, eps, maxGain float32) error {
	return d.ref.RatioRelight(dst, src, eNew, eOld, alpha, eps, maxGain)
}

// ReadPixels returns a copy of src, planar, channel-major.
func (d *CPU) ReadPixels(src Image) ([]float32, error) { return d.ref.ReadPixels(src) }

// ReadPixelsTo is ReadPixels into dst's memory when it is large enough.
func (d *CPU) ReadPixelsTo(dst []float32, src Image) ([]float32, error) {
	return d.ref.ReadPixelsTo(dst, src)
}

// ResizeArea downsamples src to dst's size by exact area averaging (see
// Ops.ResizeArea). ErrShape if dst is larger than src in either axis or
// the channel counts differ.
func (d *CPU) ResizeArea(dst, src Image) error { return d.ref.ResizeArea(dst, src) }

// ResizeAreaFrame is Upload of src into an image of the frame's size
// followed by ResizeArea into dst (see Ops.ResizeAreaFrame), without the
// full-size image: each output row converts only the input rows it
// covers. Errors: an invalid frame, a foreign image, a format the
// channels do not fit, or dst larger than the frame (ErrShape).
func (d *CPU) ResizeAreaFrame(dst Image, src *frame.HostFrame) error {
	return d.ref.ResizeAreaFrame(dst, src)
}

// ResizeBilinear resamples src to dst's size with bilinear interpolation,
// pixel centres aligned, edges clamped (see Ops.ResizeBilinear): each
// source row is interpolated horizontally, then rows are blended.
func (d *CPU) ResizeBilinear(dst, src Image) error { return d.ref.ResizeBilinear(dst, src) }

// ResizeLanczos3 resamples src to dst's size with a separable Lanczos-3
// filter, widened by the scale when downsampling, edges clamped (see
// Ops.ResizeLanczos3). The same size is an exact copy.
func (d *CPU) ResizeLanczos3(dst, src Image) error { return d.ref.ResizeLanczos3(dst, src) }

// SHEval writes sum_k coeffs[c][k]*Y_k(n) into each channel c of dst (see
// Ops.SHEval); the basis is evaluated in float32.
func (d *CPU) SHEval(dst, normals Image, coeffs []SH9) error {
	return d.ref.SHEval(dst, normals, coeffs)
}

// SHNormalEquations accumulates ata = sum w*Y(n)Y(n)^T and
// atb = sum w*Y(n)*s in float64 (see Ops.SHNormalEquations). Normals are
// used as given (not renormalised); pixels of weight 0 are skipped.
func (d *CPU) SHNormalEquations(signal, normals, mask Image) (ata [81]float64, atb [9]float64, err error) {
	return d.ref.SHNormalEquations(signal, normals, mask)
}

// SHProjectEnv projects the 3-channel radiance image src onto SH9 per
// channel with the equirectangular back-hemisphere mapping and mirrored
// front of Ops.SHProjectEnv. The front hemisphere is folded in
// analytically: mirroring z flips the sign of Y10, Y2-1 and Y21 only, so
// L_k = (1 + front*sign_k) * sum L*Y_k(d)*dOmega.
func (d *CPU) SHProjectEnv(src Image, front float32) ([3]SH9, error) {
	return d.ref.SHProjectEnv(src, front)
}

// Sharpen is the unsharp mask of ScaleOps.Sharpen.
func (d *CPU) Sharpen(dst, src Image, amount float32) error { return d.ref.Sharpen(dst, src, amount) }

// SharpenDownload is ScaleOps.SharpenDownload: rows are sharpened two at a
// time into a per-worker strip and converted at once.
func (d *CPU) SharpenDownload(dst *frame.HostFrame, src Image, amount float32) error {
	return d.ref.SharpenDownload(dst, src, amount)
}

// Shift samples src at a constant offset (see MatteOps.Shift): the
// positions' columns and rows are clamped once, then each pixel is
// Warp's bilinear formula.
func (d *CPU) Shift(dst, src Image, dx, dy float32) error { return d.ref.Shift(dst, src, dx, dy) }

// Sum returns the float64 sum of each channel of src.
func (d *CPU) Sum(src Image) ([]float64, error) { return d.ref.Sum(src) }

// TrimPool drops the freed buffers the device keeps for reuse, so that
// the Go heap can reclaim them (see PoolTrimmer). Images in use are not
// touched; later allocations fill the pool again.
func (d *CPU) TrimPool() { d.ref.TrimPool() }

// Upload converts src into dst (see Device.Upload). Errors: an invalid
// frame, a foreign image, or a size/channel mismatch (ErrShape).
func (d *CPU) Upload(dst Image, src *frame.HostFrame) error { return d.ref.Upload(dst, src) }

// UpscaleEdge resamples src to dst's size (see ScaleOps.UpscaleEdge).
func (d *CPU) UpscaleEdge(dst, src Image, edge float32) error {
	return d.ref.UpscaleEdge(dst, src, edge)
}

// Warp samples src along a flow field (see MatteOps.Warp).
func (d *CPU) Warp(dst, src, flow Image, scale float32) error {
	return d.ref.Warp(dst, src, flow, scale)
}

// Workers is the number of goroutines the device uses per op.
func (d *CPU) Workers() int { return d.ref.Workers() }

// WritePixels copies planar, channel-major data into dst; len(data) must
// be exactly width*height*channels (else an error wrapping ErrShape).
func (d *CPU) WritePixels(dst Image, data []float32) error { return d.ref.WritePixels(dst, data) }
