package matte

import (
	"github.com/vfxrender/vfx/kernels"
)

// Refiner brings a flow-size matte to the output size: He et al.'s
// guided filter with the frame's colour as the guide, its coefficients
// made at the flow size and upsampled (the fast guided filter, kernels'
// GuidedFilterColour), which snaps the soft edge to the image's own
// edges, those of hue that luma does not show included (grey legs on a
// pale ground, a red shirt on green foliage of the same brightness). The
// filter acts on the band around the contour only: an output pixel whose
// flow-size neighbourhood is one constant 0 or 1 keeps that value (see
// softBand), so that the subject's interior stays opaque and the
// background clear however textured the frame is there.
type Refiner struct {
	dev       kernels.Device
	band1, up kernels.Image // output size, 1 channel
	lowBand   kernels.Image // flow size, 1 where the filter may act
	band      []float32
	w, h      int
	radius    int
	eps       float32
}

// refineEps is the guided filter's regulariser (on linear RGB; the luma
// filter's it replaced, nothing fitted).
const refineEps = 2e-4

// NewRefiner returns a refiner for w x h output frames whose mattes come
// from lw x lh (the flow size).
func NewRefiner(dev kernels.Device, w, h, lw, lh int) (*Refiner, error) {
	r := &Refiner{dev: dev, w: w, h: h, eps: refineEps}
	// The window spans two flow pixels: the filter's coefficients are
	// computed at the flow size (kernels' fast path, src smaller than the
	// guide) and upsampled; the output-size guide gives the edge its
	// detail.
	r.radius = 2
	var err error
	if r.band1, err = dev.NewImage(w, h, 1); err != nil {
		return nil, err
	}
	if r.up, err = dev.NewImage(w, h, 1); err != nil {
		r.Close()
		return nil, err
	}
	if r.lowBand, err = dev.NewImage(lw, lh, 1); err != nil {
		r.Close()
		return nil, err
	}
	return r, nil
}

// SetFilter replaces the guided filter's window radius (in flow pixels,
// at least 1) and regulariser (positive); 0 keeps each default (2 and
// refineEps). For trials (`vfx bench matte --refine-radius/--refine-eps`).
func (r *Refiner) SetFilter(radius int, eps float32) {
	if radius > 0 {
		r.radius = radius
	}
	if eps > 0 {
		r.eps = eps
	}
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
	m, err := r.dev.ReadPixels(low)
	if err != nil {
		return err
	}
	lw, lh := low.Width(), low.Height()
	r.band = softBand(r.band, m, lw, lh)
	if err := r.dev.WritePixels(r.lowBand, r.band); err != nil {
		return err
	}
	if err := ops.ResizeBilinear(r.up, low); err != nil {
		return err
	}
	if err := ops.GuidedFilterColour(dst, src, low, r.radius, r.eps); err != nil {
		return err
	}
	if err := ops.ResizeBilinear(r.band1, r.lowBand); err != nil {
		return err
	}
	return ops.Composite(dst, dst, r.up, r.band1)
}

// softBand writes into dst (reused when long enough) 1 for each pixel of
// the w x h matte m whose 3x3 neighbourhood holds a value strictly
// between 0 and 1 or both 0 and 1 (the soft band and the contour, widened
// by one pixel), else 0.
func softBand(dst, m []float32, w, h int) []float32 {
	if cap(dst) < len(m) {
		dst = make([]float32, len(m))
	}
	dst = dst[:len(m)]
	for y := range h {
		for x := range w {
			var zero, one, soft bool
			for yy := max(y-1, 0); yy <= min(y+1, h-1); yy++ {
				for xx := max(x-1, 0); xx <= min(x+1, w-1); xx++ {
					switch v := m[yy*w+xx]; {
					case v <= 0:
						zero = true
					case v >= 1:
						one = true
					default:
						soft = true
					}
				}
			}
			if soft || (zero && one) {
				dst[y*w+x] = 1
			} else {
				dst[y*w+x] = 0
			}
		}
	}
	return dst
}

// Close frees the refiner's images.
func (r *Refiner) Close() {
	for _, im := range []kernels.Image{r.band1, r.up, r.lowBand} {
		if im != nil {
			r.dev.Free(im)
		}
	}
}
