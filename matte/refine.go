package matte

import (
	"github.com/vfxrender/vfx/kernels"
)

// Refiner brings a flow-size matte to the output size: bilinear
// upsampling, then He et al.'s guided filter with the frame's luma as the
// guide, which snaps the soft edge to the image's own edges.
type Refiner struct {
	dev       kernels.Device
	guide, up kernels.Image
	w, h      int
	radius    int
	eps       float32
}

// NewRefiner returns a refiner for w x h output frames whose mattes come
// from lw x lh (the flow size).
func NewRefiner(dev kernels.Device, w, h, lw, lh int) (*Refiner, error) {
	r := &Refiner{dev: dev, w: w, h: h, eps: 2e-4}
	// The window spans about two flow pixels.
	r.radius = max(2, (2*w+lw-1)/lw)
	var err error
	if r.guide, err = dev.NewImage(w, h, 1); err != nil {
		return nil, err
	}
	if r.up, err = dev.NewImage(w, h, 1); err != nil {
		dev.Free(r.guide)
		return nil, err
	}
	return r, nil
}

// Refine writes into dst (1 channel, output size) the refined matte of
// low (1 channel, flow size) for the frame src (3 channels linear RGB,
// output size). The guided filter may overshoot [0,1] slightly; callers
// clamp (a Download to Gray8 does).
func (r *Refiner) Refine(dst, src, low kernels.Image) error {
	ops := r.dev.Ops()
	if err := checkSize("refine dst", dst, r.w, r.h, 1); err != nil {
		return err
	}
	if err := ops.Luma(r.guide, src); err != nil {
		return err
	}
	if err := ops.ResizeBilinear(r.up, low); err != nil {
		return err
	}
	return ops.GuidedFilter(dst, r.guide, r.up, r.radius, r.eps)
}

// Close frees the refiner's images.
func (r *Refiner) Close() {
	r.dev.Free(r.guide)
	r.dev.Free(r.up)
}
