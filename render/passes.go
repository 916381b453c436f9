package render

import (
	"context"
	"fmt"

	"github.com/vfxrender/vfx/kernels"
)

// Passes are the terms of one frame's composite as full-size linear
// images on the device, for a compositor to grade apart (EXR passes,
// the clean foreground). With A the alpha, FG the clean foreground
// (premultiplied), BG the backdrop, S the shadow, W the light wrap and G
// the grain, the composite is, per pixel and channel,
//
//	Composite = G · (FG + (1 − A) · BG · (1 − S) + W)
//
// which FramePasses makes exactly (up to float rounding) from the same
// fused pass as the render. In fill mode A = 1, and BG, S and W are 0.
type Passes struct {
	// Composite (3 channels) is the frame as the render shows it.
	Composite kernels.Image
	// Foreground (3 channels) is the clean relit subject premultiplied by
	// the alpha, A·F': the relight and harmonisation, the foreground
	// estimate in the soft band, no new background, no light wrap, no
	// shadow and no grain.
	Foreground kernels.Image
	// Alpha (1 channel) is the matte used.
	Alpha kernels.Image
	// Gain (3 channels) is the relight gain at full size: the relit and
	// harmonised subject over the source (outside the soft band, FG = A ·
	// min(source · Gain, 1)).
	Gain kernels.Image
	// Shadow (1 channel) is the darkness of the contact and cast shadows
	// on the backdrop (0 = none).
	Shadow kernels.Image
	// Wrap (3 channels) is the light wrap, the blurred backdrop spilling
	// over the subject's inner edge, added to the composite.
	Wrap kernels.Image
	// Backdrop (3 channels) is the new background: the cover-fitted
	// reference or the backdrop painted from the prompt.
	Backdrop kernels.Image
	// Normals (3 channels, x right, y up, z toward the camera, in -1..1)
	// are the pseudo-normals the new light was evaluated on, upsampled.
	Normals kernels.Image
	// Grain (3 channels) is the gain of the plate's grain (and of the
	// highlight cap that follows it) on the composite: 1 where no grain
	// is added.
	Grain kernels.Image

	dev kernels.Device
	// fgOnly: only Composite, Foreground and Alpha are made
	// (NewForegroundPasses).
	fgOnly               bool
	noGrain              kernels.Image // the composite without grain
	zeros3, zeros1, ones kernels.Image
}

// NewPasses allocates the pass images for this renderer's frame size. The
// caller frees them with Free.
func (r *Renderer) NewPasses() (*Passes, error) {
	p := &Passes{dev: r.dev}
	var err error
	alloc := func(dst *kernels.Image, c int) {
		if err == nil {
			*dst, err = r.dev.NewImage(r.w, r.h, c)
		}
	}
	for _, im := range []struct {
		dst *kernels.Image
		c   int
	}{{&p.Composite, 3}, {&p.Foreground, 3}, {&p.Alpha, 1}, {&p.Gain, 3}, {&p.Shadow, 1}, {&p.Wrap, 3},
		{&p.Backdrop, 3}, {&p.Normals, 3}, {&p.Grain, 3}, {&p.noGrain, 3}, {&p.zeros3, 3}, {&p.zeros1, 1}, {&p.ones, 1}} {
		alloc(im.dst, im.c)
	}
	if err == nil {
		err = r.ops.Fill(p.ones, []float32{1})
	}
	if err != nil {
		p.Free()
		return nil, fmt.Errorf("render: passes: %w", err)
	}
	return p, nil
}

// NewForegroundPasses allocates only the passes a clean foreground output
// needs: Composite, Foreground and Alpha (the others stay nil and
// FramePasses skips them), a third of NewPasses' memory. The caller frees
// them with Free.
func (r *Renderer) NewForegroundPasses() (*Passes, error) {
	p := &Passes{dev: r.dev, fgOnly: true}
	var err error
	for _, im := range []struct {
		dst *kernels.Image
		c   int
	}{{&p.Composite, 3}, {&p.Foreground, 3}, {&p.Alpha, 1}, {&p.zeros3, 3}, {&p.ones, 1}} {
		if err == nil {
			*im.dst, err = r.dev.NewImage(r.w, r.h, im.c)
		}
	}
	if err == nil {
		err = r.ops.Fill(p.ones, []float32{1})
	}
	if err != nil {
		p.Free()
		return nil, fmt.Errorf("render: passes: %w", err)
	}
	return p, nil
}

// Free returns the pass images to the device. It is idempotent.
func (p *Passes) Free() {
	if p == nil || p.dev == nil {
		return
	}
	for _, img := range []kernels.Image{p.Composite, p.Foreground, p.Alpha, p.Gain, p.Shadow, p.Wrap, p.Backdrop,
		p.Normals, p.Grain, p.noGrain, p.zeros3, p.zeros1, p.ones} {
		p.dev.Free(img)
	}
	*p = Passes{}
}

// Unpremultiply writes the clean foreground's colour F' = FG / A into
// dst (3 channels, full size), 0 where A is 0: the colour that an encoder
// premultiplying by the 8-bit alpha (a ProRes 4444 or RGBA PNG
// foreground) takes.
func (r *Renderer) Unpremultiply(dst kernels.Image, p *Passes) error {
	// dst = FG * ones / max(A, eps), the gain capped where A is tiny.
	if err := r.ops.RatioRelight(dst, p.Foreground, p.ones, p.Alpha, nil, 1.0/1024, 1024); err != nil {
		return fmt.Errorf("render: unpremultiply: %w", err)
	}
	return nil
}

// FramePasses is Frame that also writes every pass of the frame into p
// (made by NewPasses): p.Composite is what Frame writes into dst. src and
// alpha are as for Frame. It runs the fused composite four times (with
// and without grain, the clean foreground and the wrap), so it costs
// several times a Frame: a job computes passes only when
// they are asked for.
func (r *Renderer) FramePasses(ctx context.Context, p *Passes, src, alpha kernels.Image) error {
	if err := r.checkShapes(src, src, alpha); err != nil {
		return err
	}
	src, alpha, err := r.place.run(src, alpha)
	if err != nil {
		return err
	}
	return r.frame(ctx, r.lowImages(src, alpha), r.deviceComp(src, alpha), func(bg, bgBlur, aBlur kernels.Image, wrap float32) error {
		if r.fill {
			return r.fillPasses(p, src)
		}
		return r.mattePasses(p, src, alpha, bg, bgBlur, aBlur, wrap)
	})
}

// passStep wraps a pass's error with its name.
func passStep(name string, err error) error {
	if err != nil {
		return fmt.Errorf("render: pass %s: %w", name, err)
	}
	return nil
}

// fillPasses writes the passes of a fill-mode frame (its gain made).
func (r *Renderer) fillPasses(p *Passes, src kernels.Image) error {
	ops, step := r.ops, passStep
	if err := step("composite", ops.GainComposite(p.Composite, src, nil, r.low.gain, nil, nil, nil, 0, 1)); err != nil {
		return err
	}
	if p.fgOnly {
		if err := step("foreground", ops.Copy(p.Foreground, p.Composite)); err != nil {
			return err
		}
		return step("alpha", ops.Fill(p.Alpha, []float32{1}))
	}
	for _, e := range []struct {
		name string
		err  error
	}{
		{"gain", ops.ResizeBilinear(p.Gain, r.low.gain)},
		{"foreground", ops.Copy(p.Foreground, p.Composite)},
		{"alpha", ops.Fill(p.Alpha, []float32{1})},
		{"shadow", ops.Fill(p.Shadow, []float32{0})},
		{"wrap", ops.Fill(p.Wrap, []float32{0, 0, 0})},
		{"backdrop", ops.Fill(p.Backdrop, []float32{0, 0, 0})},
		{"normals", ops.ResizeBilinear(p.Normals, r.normals.fillNormals)},
		{"grain", ops.Fill(p.Grain, []float32{1, 1, 1})},
	} {
		if err := step(e.name, e.err); err != nil {
			return err
		}
	}
	return nil
}

// mattePasses writes the passes of a frame with a matte (its gain, foreground
// estimates and shadows made).
func (r *Renderer) mattePasses(p *Passes, src, alpha, bg, bgBlur, aBlur kernels.Image, wrap float32) error {
	ops, step := r.ops, passStep
	look := r.compositeLook()
	clean := look
	clean.Grain, clean.GrainAmount = nil, 0
	if err := step("composite", ops.GainCompositeLook(p.Composite, src, alpha, r.low.gain, bg, bgBlur, aBlur, look, wrap, 1)); err != nil {
		return err
	}
	// FG: the new background black, no wrap (bgBlur nil), no shadow; the
	// composite's soft-band fade, so the passes still add up to it.
	fgLook := kernels.CompositeLook{FgLow: look.FgLow, BgOldLow: look.BgOldLow, EdgeFade: look.EdgeFade}
	if err := step("foreground", ops.GainCompositeLook(p.Foreground, src, alpha, r.low.gain, p.zeros3, nil, nil, fgLook, 0, 1)); err != nil {
		return err
	}
	if p.fgOnly {
		return step("alpha", ops.Copy(p.Alpha, alpha))
	}
	if err := step("gain", ops.ResizeBilinear(p.Gain, r.low.gain)); err != nil {
		return err
	}
	if err := step("composite", ops.GainCompositeLook(p.noGrain, src, alpha, r.low.gain, bg, bgBlur, aBlur, clean, wrap, 1)); err != nil {
		return err
	}
	// W: a black subject over a black background, with the wrap.
	plate := kernels.CompositeLook{PlateX: look.PlateX, PlateY: look.PlateY, WrapLow: look.WrapLow} // the camera lock's, the wrap's light
	if err := step("wrap", ops.GainCompositeLook(p.Wrap, p.zeros3, alpha, r.low.gain, p.zeros3, bgBlur, aBlur, plate, wrap, 1)); err != nil {
		return err
	}
	if look.ShadowLow != nil {
		if err := step("shadow", ops.ResizeBilinear(p.Shadow, look.ShadowLow)); err != nil {
			return err
		}
	} else if err := step("shadow", ops.Fill(p.Shadow, []float32{0})); err != nil {
		return err
	}
	if err := step("alpha", ops.Copy(p.Alpha, alpha)); err != nil {
		return err
	}
	if err := step("backdrop", r.backdrop(p.Backdrop, bg, look)); err != nil {
		return err
	}
	if err := step("normals", ops.ResizeBilinear(p.Normals, r.normals.nDetail)); err != nil {
		return err
	}
	// G = composite / composite without grain, 1 where the latter is
	// below 1e-6 (there the composite is too).
	return step("grain", p.grainGain())
}

// backdrop writes the plate as the composite saw it into dst: moved by
// the camera lock (look's plate offset) or as it is.
func (r *Renderer) backdrop(dst, bg kernels.Image, look kernels.CompositeLook) error {
	if look.PlateX != 0 || look.PlateY != 0 {
		return r.ops.Shift(dst, bg, look.PlateX, look.PlateY)
	}
	return r.ops.Copy(dst, bg)
}

// grainGain computes p.Grain from p.Composite and p.noGrain on the host.
func (p *Passes) grainGain() error {
	c, err := p.dev.ReadPixels(p.Composite)
	if err != nil {
		return err
	}
	c0, err := p.dev.ReadPixels(p.noGrain)
	if err != nil {
		return err
	}
	for i, v := range c0 {
		if v > 1e-6 {
			c[i] /= v
		} else {
			c[i] = 1
		}
	}
	return p.dev.WritePixels(p.Grain, c)
}
