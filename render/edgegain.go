package render

import (
	"fmt"

	"github.com/vfxrender/vfx/kernels"
)

// edgeGainSigma is the reach of ext's normalised convolution (pixels at
// a quarter of the working resolution: 120 x 67 at 1080p). Chosen on
// the look bench's fold A (bench/look FoldSubjects): the least sum, over
// the six prompts whose halo fails, of the worst subject's halo. At half
// the working resolution, sigma 1 and 2: 0.1982, 0.1968; at a quarter
// (a quarter of the cost), sigma 1 and 2: 0.1975, 0.1958; without the
// stage 0.2193.
const edgeGainSigma = 2

// edgeGainFloor is the weight every pixel's own gain keeps in ext, so
// that far from the subject (where its alpha^4 has not reached) ext is
// the gain itself and nothing is lowered.
const edgeGainFloor = 1e-3

// edgeGainStage limits the gain on the matte's soft band to the gain of
// the subject next to it. The frame's gain is made at the working
// resolution, where a pixel on the matte's edge mixes the subject with
// the background round it (whose normals face the camera), and the
// composite samples it bilinearly: the soft band read a gain half made of
// the background's, above the subject's own edge's where a key lights the
// front more than the silhouette (a glow round the subject, issue 31's
// halo). The subject's gain is carried outward at a quarter of the
// working resolution by a normalised convolution weighted by alpha^4 (as
// the foreground estimate carries its colours; edgeGainFloor), ext;
// where the matte is below 1/2 the gain becomes min(gain, ext), blending
// back to its own value at 1/2 (weight min(1, 2a)). The gain is only
// ever lowered, so the side a key darkens keeps its darkness. Existing
// ops only (CPU and CUDA), about 1 ms of CPU a frame at 1080p
// (BenchmarkEdgeGain1080p).
type edgeGainStage struct {
	dev    kernels.Device
	ops    kernels.Ops
	sigma  float32 // edgeGainSigma; 0: off (tests)
	images []*kernels.Image

	aQ, w2, w4, den, onesQ, keep kernels.Image // quarter res, 1 channel
	gQ, num, numB, extQ          kernels.Image // quarter res, 3 channels
	ext                          kernels.Image // working res, 3 channels
	t, zero                      kernels.Image // working res, 1 channel (t holds u, run)
}

func newEdgeGainStage(dev kernels.Device, ops kernels.Ops, lw, lh int, sigma float32) (*edgeGainStage, error) {
	s := &edgeGainStage{dev: dev, ops: ops, sigma: sigma}
	a := allocator{dev: dev}
	qw, qh := max(1, lw/4), max(1, lh/4)
	for _, p := range []*kernels.Image{&s.aQ, &s.w2, &s.w4, &s.den, &s.onesQ, &s.keep} {
		a.img(p, qw, qh, 1)
	}
	for _, p := range []*kernels.Image{&s.gQ, &s.num, &s.numB, &s.extQ} {
		a.img(p, qw, qh, 3)
	}
	a.img(&s.ext, lw, lh, 3)
	a.img(&s.t, lw, lh, 1)
	a.img(&s.zero, lw, lh, 1)
	s.images = a.made
	if a.err != nil {
		s.free()
		return nil, fmt.Errorf("render: allocate: %w", a.err)
	}
	if err := ops.Fill(s.keep, []float32{1 - edgeGainFloor}); err != nil {
		s.free()
		return nil, fmt.Errorf("render: fill: %w", err)
	}
	if err := ops.Fill(s.onesQ, []float32{1}); err != nil {
		s.free()
		return nil, fmt.Errorf("render: fill: %w", err)
	}
	if err := ops.Fill(s.zero, []float32{0}); err != nil {
		s.free()
		return nil, fmt.Errorf("render: fill: %w", err)
	}
	return s, nil
}

func (s *edgeGainStage) free() { freeImages(s.dev, s.images) }

// run lowers f.gain on the soft band (and outside the matte) to the
// subject's gain next to it.
func (s *edgeGainStage) run(f *lowFrame) error {
	if s == nil || s.sigma <= 0 {
		return nil
	}
	ops := s.ops
	const big = 1e30
	return steps(
		// a^4 at a quarter of the working resolution.
		namedStep{"edge gain", func() error { return ops.ResizeArea(s.aQ, f.alphaQ) }},
		namedStep{"edge gain", func() error { return ops.RatioRelight(s.w2, s.aQ, s.aQ, s.onesQ, nil, 1e-6, big) }},
		namedStep{"edge gain", func() error { return ops.RatioRelight(s.w4, s.w2, s.w2, s.onesQ, nil, 1e-6, big) }},
		// (1 - floor)*a^4 + floor: far from the subject ext is the gain
		// itself.
		namedStep{"edge gain", func() error { return ops.Composite(s.w4, s.w4, s.onesQ, s.keep) }},
		// The subject's gain carried outward.
		namedStep{"edge gain", func() error { return ops.ResizeArea(s.gQ, f.gain) }},
		namedStep{"edge gain", func() error { return ops.RatioRelight(s.num, s.gQ, s.w4, s.onesQ, nil, 1e-6, big) }},
		namedStep{"edge gain", func() error { return ops.GaussianBlur(s.numB, s.num, s.sigma) }},
		namedStep{"edge gain", func() error { return ops.GaussianBlur(s.den, s.w4, s.sigma) }},
		namedStep{"edge gain", func() error { return ops.RatioRelight(s.extQ, s.numB, s.onesQ, s.den, nil, 1e-6, big) }},
		namedStep{"edge gain", func() error { return ops.ResizeBilinear(s.ext, s.extQ) }},
		// u = 1 - min(1, 2a); gain = gain*(1 + u*(min(1, ext/gain) - 1))
		// = (1 - u)*gain + u*min(gain, ext): one pass over the gain.
		namedStep{"edge gain", func() error { return ops.RatioRelight(s.t, f.ones1, f.alphaLow, s.zero, nil, 0.5, 1) }},
		namedStep{"edge gain", func() error { return ops.Composite(s.t, s.zero, f.ones1, s.t) }},
		namedStep{"edge gain", func() error { return ops.RatioRelight(f.gain, f.gain, s.ext, f.gain, s.t, gainEps, 1) }},
	)
}
