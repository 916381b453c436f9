package kernels

import "github.com/vfxrender/vfx/kernels/rows"
import "github.com/vfxrender/vfx/kernels/cpuref"

// FuseParams weigh the evidence terms of MatteFuse. Their fields are documented at
// their definition, cpuref.FuseParams.
type FuseParams = cpuref.FuseParams

// ChromaParams configure ChromaKey. Their fields are documented at
// their definition, cpuref.ChromaParams.
type ChromaParams = cpuref.ChromaParams

// MatteOps are the operations of optical flow, matte propagation and auto
// mattes (package matte). Flow fields are 2-channel images (u, v) in
// pixels of a reference grid; an op that works on a pyramid level takes
// scale = level size / reference size, so a vector (u, v) moves a level
// pixel by (u*scale, v*scale). Borders clamp.
type MatteOps interface {
	// Gradient writes the central differences of the 1-channel src into
	// the 2-channel dst: gx = (s(x+1,y) - s(x-1,y))/2,
	// gy = (s(x,y+1) - s(x,y-1))/2, neighbours clamped to the image (so a
	// 1-pixel-wide image has gx = 0).
	Gradient(dst, src Image) error
	// Warp writes dst(x,y) = src sampled bilinearly at
	// (x + scale*u(x,y), y + scale*v(x,y)) in pixel-index coordinates
	// (sample (i,j) sits at integer i,j), the position clamped to
	// [0, w-1] x [0, h-1]. flow is 2 channels; dst, src and flow have the
	// same size and dst and src the same channel count. Weights are
	// fx = px - floor(px), computed in float32: dst = (1-fy)*((1-fx)*a +
	// fx*b) + fy*((1-fx)*c + fx*d).
	Warp(dst, src, flow Image, scale float32) error
	// Shift is Warp with a constant flow (dx, dy) and scale 1, with the
	// same result bit for bit: dst(x,y) = src sampled bilinearly at
	// (x + dx, y + dy), the position clamped to the image. dst and src
	// have the same size and channel count and must not alias. It moves
	// a whole picture (the camera-locked plate) without a flow image.
	Shift(dst, src Image, dx, dy float32) error
	// FlowTensor writes the 3-channel structure products
	// (gx*gx, gx*gy, gy*gy) of the 2-channel gradient grad.
	FlowTensor(dst, grad Image) error
	// FlowMismatch writes the 2-channel products (gx*e, gy*e) with
	// e = warped - ref (both 1 channel) and grad 2 channels.
	FlowMismatch(dst, grad, ref, warped Image) error
	// FlowSolve updates flow in place from the box-filtered tensor
	// (a, b, c) = (sum gx², sum gx gy, sum gy²) and mismatch (p, q):
	// with a' = a + lambda, c' = c + lambda, det = a'c' - b², the level
	// step is d = -(c'p - b q, a'q - b p) * (1/det) (0 when det <= 1e-12),
	// scaled down to length maxStep when longer, and the flow moves by
	// d/scale. Computed in float64, stored as float32.
	FlowSolve(flow, tensor, mismatch Image, lambda, maxStep, scale float32) error
	// FlowConfidence writes the forward–backward consistency of a flow
	// pair into the 1-channel dst: with f = fwd(x,y) and b = bwd sampled
	// bilinearly (as Warp, scale 1) at (x+fu, y+fv), e = |f + b|² and
	// dst = exp(-e / sigma²); dst = 0 where (x+fu, y+fv) lies outside
	// [-0.5, w-0.5] x [-0.5, h-0.5] (more than half a pixel off the
	// image: the pixel left the frame). sigma > 0.
	FlowConfidence(dst, fwd, bwd Image, sigma float32) error
	// ColourHistogram returns the weighted histogram of the 3-channel src
	// over bins³ cells: channel value v goes to bin
	// min(bins-1, floor(clamp(v,0,1)*bins)) and cell (r*bins+g)*bins+b
	// receives the weight of the 1-channel weight image (nil = 1).
	// Accumulated in float64 by fixed row bands, so the result does not
	// depend on the worker count. 2 <= bins <= 64.
	ColourHistogram(src, weight Image, bins int) ([]float64, error)
	// MatteFuse writes the 1-channel matte dst = 1/(1+exp(-L)), where L
	// (float64) sums four log-odds terms, each skipped when its inputs
	// are nil or its weight is 0:
	//   prior:  Prior * conf * logit(clamp(prior, 1e-3, 1-1e-3))
	//           (conf nil = 1)
	//   global: Global * logit(clamp(table[cell(src)], 1e-3, 1-1e-3))
	//           with cell as in ColourHistogram (len(table) = Bins³)
	//   local:  with m = localM, where 0.02 < m < 0.98:
	//           F = localFg/m, B = localBg/(1-m) (3 channels each),
	//           Local * clamp((|src-B|² - |src-F|²) / (2 LocalSigma²), -8, 8)
	//   plate:  Plate * clamp((|src-plate| - PlateThreshold) /
	//           PlateSoftness, -8, 8)  (Euclidean distance over 3 channels)
	// src, localFg, localBg and plate have 3 channels; prior, conf and
	// localM 1 channel; localFg, localBg and localM are all nil or all set.
	MatteFuse(dst, src, prior, conf, localFg, localBg, localM, plate Image, table []float32, p FuseParams) error
	// ChromaKey keys a screen: with c = p.Channel and o1, o2 the other
	// channels, k(v) = v[c] - max(v[o1], v[o2]), t = k(src)/k(Screen)
	// (k(Screen) must be > 0), alpha = clamp((High - t)/(High - Low), 0, 1)
	// into the 1-channel alpha; dst (3 channels, may be src itself) gets
	// src with spill removed: dst[c] = min(src[c], max(src[o1], src[o2])).
	ChromaKey(alpha, dst, src Image, p ChromaParams) error
}

// ColourCell is the histogram cell of an RGB value (see
// MatteOps.ColourHistogram): each channel, clamped to [0,1], in bins
// equal steps.
func ColourCell(r, g, b float32, bins int) int { return rows.ColourCell(r, g, b, bins) }
