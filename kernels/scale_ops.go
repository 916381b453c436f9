package kernels

import "github.com/vfxrender/vfx/frame"

// ScaleOps are the operations of the vfx_finish upscaler (and of the fast
// mode of product vfx): an edge-aware Lanczos-3 upscale and an unsharp
// mask, the latter also fused with Download.
type ScaleOps interface {
	// UpscaleEdge resamples src to dst's size (channels equal; dst at
	// least as large as src in both axes, else ErrShape) with a separable
	// Lanczos-3 filter whose overshoot next to edges is limited:
	//
	// Pass 1 (rows): for every row y of src and output column i, with
	// c = (i + 0.5)*sw/dw - 0.5, the taps j = ceil(c-3) .. floor(c+3) read
	// src at min(max(j, 0), sw-1) (weights of taps outside the image fold
	// onto the edge sample), weighted by L3(j - c) = sinc(x)sinc(x/3)
	// computed in float64, normalised to sum 1 and rounded to float32; the
	// sum l is taken in float32 exactly as ResizeLanczos3's passes do it
	// (weights of folded taps merged per clamped sample; two running sums
	// over even and odd taps, added at the end). With a =
	// src[clamp(floor(c))] and b = src[clamp(floor(c)+1)], the result is
	// l + edge*(min(max(l, min(a, b)), max(a, b)) - l): edge 0 is plain
	// Lanczos-3, edge 1 clamps every sample to the range of its two
	// nearest inputs (no ringing or halo, edges stay as steep as
	// Lanczos makes them). The pass writes a dw x sh float32 intermediate.
	//
	// Pass 2 (columns): the same on the intermediate's columns, with
	// c = (y + 0.5)*sh/dh - 0.5, into dst.
	//
	// edge is clamped to [0, 1]. Equal sizes copy src.
	UpscaleEdge(dst, src Image, edge float32) error
	// Sharpen is an unsharp mask: with the 3x3 binomial blur
	// h(x) = (0.25*s(x-1) + 0.5*s(x)) + 0.25*s(x+1) along rows and
	// b(y) = (0.25*h(y-1) + 0.5*h(y)) + 0.25*h(y+1) along columns (float32,
	// in that order; borders clamp), dst = s + amount*(s - b) per channel.
	// Values are not clamped. amount 0 copies.
	Sharpen(dst, src Image, amount float32) error
	// SharpenDownload is Sharpen into a 3-channel image of dst's size
	// followed by Download into the host frame dst (YUV420P or RGB24),
	// with the same result, without the full-size intermediate image.
	SharpenDownload(dst *frame.HostFrame, src Image, amount float32) error
}
