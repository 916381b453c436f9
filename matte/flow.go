package matte

import (
	"fmt"

	"github.com/vfxrender/vfx/kernels"
)

// FlowOptions tune the coarse-to-fine Lucas–Kanade flow.
type FlowOptions struct {
	Levels     int     // pyramid levels (each half the size of the last)
	Iterations int     // solver steps per level
	Window     int     // box radius of the local systems
	Lambda     float32 // Tikhonov regulariser of the 2x2 systems
	MaxStep    float32 // largest step per iteration, in level pixels
	Smooth     float32 // Gaussian sigma (level pixels) applied after each level
}

// DefaultFlowOptions work at about 240-480 pixels on the short side.
func DefaultFlowOptions() FlowOptions {
	return FlowOptions{Levels: 4, Iterations: 4, Window: 3, Lambda: 2e-4, MaxStep: 1, Smooth: 1}
}

// pyramid is one frame's luma at each level, with its gradient and
// box-filtered structure tensor (the "template" data of inverse search).
type pyramid struct {
	lum, grad, tensor []kernels.Image
	scale             []float32
}

func (p *pyramid) free(dev kernels.Device) {
	for _, s := range [][]kernels.Image{p.lum, p.grad, p.tensor} {
		for _, im := range s {
			dev.Free(im)
		}
	}
}

// flowEngine holds the scratch images of flow between frames of one size.
type flowEngine struct {
	dev    kernels.Device
	ops    kernels.Ops
	o      FlowOptions
	w, h   int
	sizes  [][2]int
	warped []kernels.Image // 1 ch per level
	mis    []kernels.Image // 2 ch per level
	flows  []kernels.Image // 2 ch per level (level 0 is the result buffer)
}

func newFlowEngine(dev kernels.Device, w, h int, o FlowOptions) (*flowEngine, error) {
	e := &flowEngine{dev: dev, ops: dev.Ops(), o: o, w: w, h: h}
	lw, lh := w, h
	for l := 0; l < max(o.Levels, 1); l++ {
		if l > 0 {
			if lw < 16 || lh < 16 {
				break
			}
			lw, lh = (lw+1)/2, (lh+1)/2
		}
		e.sizes = append(e.sizes, [2]int{lw, lh})
	}
	for _, s := range e.sizes {
		for _, t := range []struct {
			dst *[]kernels.Image
			c   int
		}{{&e.warped, 1}, {&e.mis, 2}, {&e.flows, 2}} {
			im, err := dev.NewImage(s[0], s[1], t.c)
			if err != nil {
				e.close()
				return nil, err
			}
			*t.dst = append(*t.dst, im)
		}
	}
	return e, nil
}

func (e *flowEngine) close() {
	for _, s := range [][]kernels.Image{e.warped, e.mis, e.flows} {
		for _, im := range s {
			e.dev.Free(im)
		}
	}
}

// pyramid builds the pyramid of a 1-channel luma image of the engine's
// size (it takes ownership of lum).
func (e *flowEngine) pyramid(lum kernels.Image) (*pyramid, error) {
	p := &pyramid{}
	fail := func(err error) (*pyramid, error) {
		p.free(e.dev)
		return nil, err
	}
	for l, s := range e.sizes {
		var im kernels.Image
		if l == 0 {
			im = lum
		} else {
			var err error
			if im, err = e.dev.NewImage(s[0], s[1], 1); err != nil {
				return fail(err)
			}
			if err := e.ops.ResizeArea(im, p.lum[l-1]); err != nil {
				e.dev.Free(im)
				return fail(err)
			}
		}
		p.lum = append(p.lum, im)
		p.scale = append(p.scale, float32(s[0])/float32(e.w))
		g, err := e.dev.NewImage(s[0], s[1], 2)
		if err != nil {
			return fail(err)
		}
		p.grad = append(p.grad, g)
		t, err := e.dev.NewImage(s[0], s[1], 3)
		if err != nil {
			return fail(err)
		}
		p.tensor = append(p.tensor, t)
		if err := e.ops.Gradient(g, im); err != nil {
			return fail(err)
		}
		if err := e.ops.FlowTensor(t, g); err != nil {
			return fail(err)
		}
		if err := e.ops.BoxFilter(t, t, e.o.Window); err != nil {
			return fail(err)
		}
	}
	return p, nil
}

// flow computes into dst (2 channels, engine size) the flow u such that
// tgt(x + u(x)) ~ ref(x), coarse to fine.
func (e *flowEngine) flow(dst kernels.Image, ref, tgt *pyramid) error {
	ops := e.ops
	top := len(e.sizes) - 1
	for l := top; l >= 0; l-- {
		fl := e.flows[l]
		if l == 0 {
			fl = dst
		}
		if l == top {
			if err := ops.Fill(fl, []float32{0, 0}); err != nil {
				return err
			}
		} else {
			prev := e.flows[l+1]
			if err := ops.ResizeBilinear(fl, prev); err != nil {
				return err
			}
		}
		sc := ref.scale[l]
		for it := 0; it < e.o.Iterations; it++ {
			if err := ops.Warp(e.warped[l], tgt.lum[l], fl, sc); err != nil {
				return err
			}
			if err := ops.FlowMismatch(e.mis[l], ref.grad[l], ref.lum[l], e.warped[l]); err != nil {
				return err
			}
			if err := ops.BoxFilter(e.mis[l], e.mis[l], e.o.Window); err != nil {
				return err
			}
			if err := ops.FlowSolve(fl, ref.tensor[l], e.mis[l], e.o.Lambda, e.o.MaxStep, sc); err != nil {
				return err
			}
		}
		if e.o.Smooth > 0 {
			if err := ops.GaussianBlur(fl, fl, e.o.Smooth); err != nil {
				return err
			}
		}
	}
	return nil
}

// FlowSize is the size flow runs at for a w x h frame: the frame scaled
// down (never up) so that its short side is at most short, rounded.
func FlowSize(w, h, short int) (int, int) {
	s := min(w, h)
	if short <= 0 || s <= short {
		return w, h
	}
	f := float64(short) / float64(s)
	return max(1, int(float64(w)*f+0.5)), max(1, int(float64(h)*f+0.5))
}

func checkSize(what string, im kernels.Image, w, h, c int) error {
	if im.Width() != w || im.Height() != h || im.Channels() != c {
		return fmt.Errorf("matte: %s is %dx%dx%d, want %dx%dx%d", what, im.Width(), im.Height(), im.Channels(), w, h, c)
	}
	return nil
}

// DefaultFlowShort is the short side flow and propagation run at.
const DefaultFlowShort = 240
