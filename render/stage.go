package render

import (
	"fmt"
	"math"

	"github.com/vfxrender/vfx/kernels"
)

// The look is a list of stages (Renderer.frame): each is a type in its own
// file with its own images and state, made once per job and run once per
// frame in order:
//
//   - lightPlan (plan.go): the target lighting from the prompt and the
//     background, a per-job constant;
//   - normalStage (normals.go): the subject's pseudo-normals;
//   - keyStage (keyrim.go): the old shading's fit, the key/fill ratio on the
//     subject, the relight and the rims;
//   - exposureStage (exposure.go, plate.go): the scene's exposure and the
//     plate matching (highlights, black level, grain);
//   - harmoniseStage (harmonise.go): the subject's colour toward the
//     background's, and the frame's gain;
//   - compositeStage (composite.go, foreground.go): the background, the
//     light wrap, the foreground estimates and shadows, and the fused
//     full-resolution pass.
//
// The stages share one lowFrame: the frame's working-resolution images
// that more than one stage reads.

// lowFrame is one frame at the working resolution: the images that the
// stages share. srcLow and alphaLow are made by the frame's first step,
// luma by the normals, alphaQ and alphaE (the matte at half and an eighth
// of it) by the normals, relit by the key, relitQ by the harmonisation,
// gain by the harmonisation.
type lowFrame struct {
	w, h                   int
	fill                   bool
	srcLow, alphaLow, luma kernels.Image
	alphaQ, alphaE         kernels.Image
	relit, relitQ, gain    kernels.Image
	ones1, ones3           kernels.Image
	scratchQ1, scratchQ3   kernels.Image // half resolution, free for a stage's use within a step
	images                 []*kernels.Image
}

// mask is the subject's weights at the working resolution (nil = all, in
// fill mode).
func (f *lowFrame) mask() kernels.Image {
	if f.fill {
		return nil
	}
	return f.alphaLow
}

// maskQ is mask at half the working resolution.
func (f *lowFrame) maskQ() kernels.Image {
	if f.fill {
		return nil
	}
	return f.alphaQ
}

// lowSize is the working resolution for a w x h output: the shorter side
// scaled to lowShortSide when larger.
func lowSize(w, h int) (int, int) {
	s := min(w, h)
	if s <= lowShortSide {
		return w, h
	}
	f := float64(lowShortSide) / float64(s)
	return max(1, int(math.Round(float64(w)*f))), max(1, int(math.Round(float64(h)*f)))
}

// qSize is half the working resolution.
func qSize(lw, lh int) (int, int) { return max(1, lw/2), max(1, lh/2) }

// eSize is an eighth of the working resolution (a quarter of qSize).
func eSize(lw, lh int) (int, int) {
	qw, qh := qSize(lw, lh)
	return max(1, qw/4), max(1, qh/4)
}

func newLowFrame(dev kernels.Device, ops kernels.Ops, lw, lh int, fill bool) (*lowFrame, error) {
	f := &lowFrame{w: lw, h: lh, fill: fill}
	qw, qh := qSize(lw, lh)
	ew, eh := eSize(lw, lh)
	a := allocator{dev: dev}
	a.img(&f.srcLow, lw, lh, 3)
	a.img(&f.alphaLow, lw, lh, 1)
	a.img(&f.luma, lw, lh, 1)
	a.img(&f.relit, lw, lh, 3)
	a.img(&f.relitQ, qw, qh, 3)
	a.img(&f.alphaQ, qw, qh, 1)
	a.img(&f.alphaE, ew, eh, 1)
	a.img(&f.gain, lw, lh, 3)
	a.img(&f.ones1, lw, lh, 1)
	a.img(&f.ones3, lw, lh, 3)
	f.images = a.made
	if a.err != nil {
		f.free(dev)
		return nil, fmt.Errorf("render: allocate: %w", a.err)
	}
	if err := fillAll(ops, fillOf{f.ones1, []float32{1}}, fillOf{f.ones3, []float32{1, 1, 1}}); err != nil {
		f.free(dev)
		return nil, err
	}
	return f, nil
}

func (f *lowFrame) free(dev kernels.Device) {
	if f != nil {
		freeImages(dev, f.images)
	}
}

// allocator allocates device images until the first error, and records
// what it made so that a stage can free it all.
type allocator struct {
	dev  kernels.Device
	err  error
	made []*kernels.Image
}

func (a *allocator) img(dst *kernels.Image, w, h, c int) {
	if a.err != nil {
		return
	}
	*dst, a.err = a.dev.NewImage(w, h, c)
	if a.err == nil {
		a.made = append(a.made, dst)
	}
}

// freeImages frees the images that are not nil and sets them to nil.
func freeImages(dev kernels.Device, imgs []*kernels.Image) {
	for _, p := range imgs {
		if *p != nil {
			dev.Free(*p)
			*p = nil
		}
	}
}

type fillOf struct {
	img kernels.Image
	v   []float32
}

// fillAll fills each image with its constant.
func fillAll(ops kernels.Ops, fs ...fillOf) error {
	for _, f := range fs {
		if err := ops.Fill(f.img, f.v); err != nil {
			return fmt.Errorf("render: fill: %w", err)
		}
	}
	return nil
}

// step wraps a stage's error with the name of its step.
func step(name string, err error) error {
	if err != nil {
		return fmt.Errorf("render: %s: %w", name, err)
	}
	return nil
}

// steps runs named steps in order until one fails.
func steps(seq ...namedStep) error {
	for _, s := range seq {
		if err := step(s.name, s.run()); err != nil {
			return err
		}
	}
	return nil
}

type namedStep struct {
	name string
	run  func() error
}

// checkShapes checks a frame's images against the renderer's size.
func (r *Renderer) checkShapes(dst, src, alpha kernels.Image) error {
	is := func(img kernels.Image, c int) bool {
		return img != nil && img.Width() == r.w && img.Height() == r.h && img.Channels() == c
	}
	if !is(dst, 3) || !is(src, 3) {
		return fmt.Errorf("render: frame: dst and src must be %dx%d with 3 channels: %w", r.w, r.h, kernels.ErrShape)
	}
	if !r.fill && !is(alpha, 1) {
		return fmt.Errorf("render: frame: alpha must be %dx%d with 1 channel: %w", r.w, r.h, kernels.ErrShape)
	}
	return nil
}
