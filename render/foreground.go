package render

import (
	"context"
	"errors"
	"fmt"
	"math"

	"github.com/vfxrender/vfx/kernels"
	"github.com/vfxrender/vfx/render/colour"
	"github.com/vfxrender/vfx/render/prompt"
)

// Foreground estimation and shadows: the per-frame inputs of the fused
// composite (kernels.GainCompositeLook): estimates at a quarter of the
// low resolution, shadows at half of it.
//
// Foreground: where the matte is fractional, the source mixes the subject
// with the old background, I = a*F + (1-a)*B. Compositing I as if it were
// F carries the old background's colour into the new one (a halo). The
// smooth estimates fm and bm are normalised convolutions of the source,
// weighted by a^4 (the subject's own colours) and (1-a)^4 (the old
// background's), that reach across the soft band; the composite then
// takes, per pixel and channel, the F and B nearest to fm and bm that
// explain I exactly (Germer et al. 2020's per-pixel step; their
// multi-level pyramid is here one Gaussian level at a quarter of the low
// resolution, which spans a refined matte's soft band).
//
// Shadow: the subject's lowest points stand on the ground. A contact
// shadow (the ground's sky occluded under the feet) darkens a short band
// under them, and the key light's cast shadow is the silhouette projected
// on the ground plane away from the key: a point h pixels above the ground
// line lands (-lx/ly, -(lz/ly)*groundFore) * h away near the feet. Where
// the shadow falls away from the camera (up the picture) the ground
// recedes: with the camera level at the subject's mid height, the horizon
// is half the subject's height d above its ground line, and an offset
// (ox, oy) of that near-field projection, oy = -u, lands at
// (ox, -u) * d/(d+u): the perspective the near-field rule is the first
// order of. A shadow then never crosses the horizon (before, a low key's
// shadow could climb into the plate's sky). Its darkness is the key's
// share of the ground's light, ly*(K-1) / (ly*(K-1) + 1) for a key/fill
// ratio K. Subjects cut by the bottom of the frame have no visible
// ground: no shadow.

const (
	// fgSigmaQ is the blur (pixels at a quarter of the low resolution) of the
	// foreground and old-background estimates.
	fgSigmaQ = 0.75
	// groundFore is the foreshortening of the ground plane (a level
	// camera at about the subject's mid height).
	groundFore = 0.3
	// contactDark is the contact shadow's darkening right under the feet
	// (half the sky hidden).
	contactDark = 0.5
	// maxShadowLen bounds the cast shadow's length per pixel of height
	// (a low sun).
	maxShadowLen = 2.0
)

// lookImages are the renderer's images for foreground estimation and
// shadows.
type lookImages struct {
	srcQ, zerosQ, onesQ1      kernels.Image
	alphaF, onesF3            kernels.Image
	a2, wF, om, om2, wB       kernels.Image // half low res, 1 channel
	numF, numB, numFb, numBb  kernels.Image // half low res, 3 channels
	wFb, wBb                  kernels.Image
	fmQ, bmQ                  kernels.Image
	fm, bm                    kernels.Image // low res, 3 channels
	shadowQ, shadowQB, shadow kernels.Image
	shadowHost                []float32
	alphaHost                 []float32 // shadows' read-back, kept for the job
	keyDir                    [3]float32
	haveKey                   bool
	castDark                  float32
	haveShadow                bool
	hardness                  float32
	contactReach              float64 // Params.ContactReach (0: DefaultContactReach)
}

func (c *compositeStage) allocLook(plan *lightPlan, lw, lh int) error {
	var err error
	alloc := func(dst *kernels.Image, w, h, ch int) {
		if err == nil {
			*dst, err = c.dev.NewImage(w, h, ch)
		}
	}
	q := &c.look
	// The estimates are made at a quarter of the low resolution.
	qw, qh := max(1, lw/4), max(1, lh/4)
	alloc(&q.alphaF, qw, qh, 1)
	alloc(&q.onesF3, qw, qh, 3)
	alloc(&q.srcQ, qw, qh, 3)
	alloc(&q.zerosQ, qw, qh, 1)
	alloc(&q.onesQ1, qw, qh, 1)
	for _, p := range []*kernels.Image{&q.a2, &q.wF, &q.om, &q.om2, &q.wB, &q.wFb, &q.wBb} {
		alloc(p, qw, qh, 1)
	}
	for _, p := range []*kernels.Image{&q.numF, &q.numB, &q.numFb, &q.numBb, &q.fmQ, &q.bmQ} {
		alloc(p, qw, qh, 3)
	}
	alloc(&q.fm, lw, lh, 3)
	alloc(&q.bm, lw, lh, 3)
	alloc(&q.shadow, lw, lh, 1)
	hw, hh := qSize(lw, lh)
	alloc(&q.shadowQ, hw, hh, 1)
	alloc(&q.shadowQB, hw, hh, 1)
	if err != nil {
		return fmt.Errorf("render: allocate: %w", err)
	}
	if err := c.ops.Fill(q.onesF3, []float32{1, 1, 1}); err != nil {
		return fmt.Errorf("render: fill: %w", err)
	}
	if err := c.ops.Fill(q.onesQ1, []float32{1}); err != nil {
		return fmt.Errorf("render: fill: %w", err)
	}
	// The key light: the first key of the prompt, and the key/fill ratio.
	for _, lt := range plan.light.Lights {
		if lt.Role == prompt.RoleKey {
			q.keyDir, q.haveKey, q.hardness = lt.Dir, true, lt.Hardness
			break
		}
	}
	if q.haveKey && q.keyDir[1] > 0.05 {
		k := KeyFillRatio(&plan.light)
		v := float64(q.keyDir[1]) * (k - 1)
		q.castDark = float32(v / (v + 1))
	}
	return nil
}

func (c *compositeStage) freeLook() {
	q := &c.look
	for _, p := range []*kernels.Image{&q.alphaF, &q.onesF3, &q.srcQ, &q.zerosQ, &q.onesQ1, &q.a2, &q.wF, &q.om, &q.om2, &q.wB,
		&q.numF, &q.numB, &q.numFb, &q.numBb, &q.wFb, &q.wBb, &q.fmQ, &q.bmQ, &q.fm, &q.bm,
		&q.shadowQ, &q.shadowQB, &q.shadow} {
		if *p != nil {
			c.dev.Free(*p)
			*p = nil
		}
	}
}

// foregroundEstimates makes look.fm and look.bm (low resolution) from
// srcLow and alphaQ.
func (c *compositeStage) foregroundEstimates(f *lowFrame) error {
	ops, q := c.ops, &c.look
	const big = 1e30
	seq := []struct {
		name string
		err  func() error
	}{
		{"foreground resize", func() error { return ops.ResizeArea(q.srcQ, f.srcLow) }},
		{"foreground resize", func() error { return ops.ResizeArea(q.alphaF, f.alphaQ) }},
		// a^4 and (1-a)^4.
		{"foreground weights", func() error { return ops.RatioRelight(q.a2, q.alphaF, q.alphaF, q.onesQ1, nil, 1e-6, big) }},
		{"foreground weights", func() error { return ops.RatioRelight(q.wF, q.a2, q.a2, q.onesQ1, nil, 1e-6, big) }},
		{"foreground weights", func() error { return ops.Composite(q.om, q.zerosQ, q.onesQ1, q.alphaF) }},
		{"foreground weights", func() error { return ops.RatioRelight(q.om2, q.om, q.om, q.onesQ1, nil, 1e-6, big) }},
		{"foreground weights", func() error { return ops.RatioRelight(q.wB, q.om2, q.om2, q.onesQ1, nil, 1e-6, big) }},
		// Normalised convolutions.
		{"foreground", func() error { return ops.RatioRelight(q.numF, q.srcQ, q.wF, q.onesQ1, nil, 1e-6, big) }},
		{"foreground", func() error { return ops.RatioRelight(q.numB, q.srcQ, q.wB, q.onesQ1, nil, 1e-6, big) }},
		{"foreground blur", func() error { return ops.GaussianBlur(q.numFb, q.numF, fgSigmaQ) }},
		{"foreground blur", func() error { return ops.GaussianBlur(q.wFb, q.wF, fgSigmaQ) }},
		{"foreground blur", func() error { return ops.GaussianBlur(q.numBb, q.numB, fgSigmaQ) }},
		{"foreground blur", func() error { return ops.GaussianBlur(q.wBb, q.wB, fgSigmaQ) }},
		{"foreground", func() error { return ops.RatioRelight(q.fmQ, q.onesF3, q.numFb, q.wFb, nil, 1e-6, maxGain) }},
		{"foreground", func() error { return ops.RatioRelight(q.bmQ, q.onesF3, q.numBb, q.wBb, nil, 1e-6, maxGain) }},
		{"foreground resize", func() error { return ops.ResizeBilinear(q.fm, q.fmQ) }},
		{"foreground resize", func() error { return ops.ResizeBilinear(q.bm, q.bmQ) }},
	}
	for _, s := range seq {
		if err := step(s.name, s.err()); err != nil {
			return err
		}
	}
	return nil
}

// shadows makes look.shadow (low resolution: the darkness, 0 = no
// shadow) from alphaQ, and sets look.haveShadow.
func (c *compositeStage) shadows(f *lowFrame) error {
	q := &c.look
	var err error
	if q.alphaHost, err = c.dev.ReadPixelsTo(q.alphaHost, f.alphaQ); err != nil {
		return step("shadow", err)
	}
	a := q.alphaHost
	w, h := f.alphaQ.Width(), f.alphaQ.Height()
	if q.shadowHost == nil {
		q.shadowHost = make([]float32, w*h)
	}
	d := q.shadowHost
	sigma := q.shadowMap(d, a, w, h)
	q.haveShadow = false
	for _, v := range d {
		if v != 0 {
			q.haveShadow = true
			break
		}
	}
	if !q.haveShadow {
		return nil
	}
	if err := c.dev.WritePixels(q.shadowQ, d); err != nil {
		return step("shadow", err)
	}
	if err := step("shadow blur", c.ops.GaussianBlur(q.shadowQB, q.shadowQ, sigma)); err != nil {
		return err
	}
	return step("shadow resize", c.ops.ResizeBilinear(q.shadow, q.shadowQB))
}

// shadowMap writes into d (w x h, cleared) the darkness of the contact and
// cast shadows of the matte a (at half the working resolution) and returns
// the blur that softens them.
func (q *lookImages) shadowMap(d, a []float32, w, h int) float32 {
	clear(d)
	low := make([]int, w)
	yg, top := -1, h
	for x := 0; x < w; x++ {
		low[x] = -1
		for y := h - 1; y >= 0; y-- {
			if a[y*w+x] >= 0.5 {
				low[x] = y
				break
			}
		}
		if low[x] >= 0 {
			yg = max(yg, low[x])
			for y := 0; y <= low[x]; y++ {
				if a[y*w+x] >= 0.5 {
					top = min(top, y)
					break
				}
			}
		}
	}
	sigma := float32(0.7)
	// No visible ground (the subject is cut by the frame's bottom) or no
	// subject: no shadow.
	if yg >= 0 && yg < h-2 {
		hs := float64(yg - top + 1)
		put := func(x, y int, v float32) {
			if x >= 0 && x < w && y >= 0 && y < h && a[y*w+x] < 0.5 && v > d[y*w+x] {
				d[y*w+x] = v
			}
		}
		// Contact: under the lowest points (within reach() of the
		// height of the lowest: the far feet of a walker or an animal
		// stand higher in the picture), over about a foot's length (8%
		// of the height) down and half that sideways, fading with the
		// distance.
		ch := max(2, int(math.Round(hs/12)))
		for x := 0; x < w; x++ {
			if low[x] < 0 || float64(low[x]) < float64(yg)-math.Max(1, hs*q.reach()) {
				continue
			}
			for dx := -ch / 2; dx <= ch/2; dx++ {
				for k := 1; k <= ch; k++ {
					f := 1 - float32(k-1+abs(dx))/float32(ch+ch/2)
					put(x+dx, low[x]+k, contactDark*f)
				}
			}
		}
		// Cast: the silhouette projected on the ground plane.
		if q.castDark > 0 {
			l := q.keyDir
			sx := colour.Clamp32(-l[0]/l[1], -maxShadowLen, maxShadowLen)
			sy := colour.Clamp32(-l[2]/l[1]*groundFore, -maxShadowLen, maxShadowLen)
			steps := max(1, int(math.Ceil(math.Max(math.Abs(float64(sx)), math.Abs(float64(sy))))))
			hz := float32(math.Max(1, hs/2)) // the horizon over the ground line
			for y := top; y <= yg; y++ {
				for x := 0; x < w; x++ {
					if a[y*w+x] < 0.5 {
						continue
					}
					hgt := float32(yg - y)
					for s := 0; s < steps; s++ {
						// Fill the stretch between neighbouring
						// heights so a long shadow has no holes.
						t := hgt + float32(s)/float32(steps)
						px, py := castPoint(float32(x), float32(yg), sx*t, sy*t, hz)
						put(px, py, q.castDark)
					}
				}
			}
		}
		// Softness: a little for the contact, more for a soft key.
		sigma = float32(math.Max(0.7, hs/60+float64(1-colour.Clamp32(q.hardness, 0, 1))*hs/40))
	}
	return sigma
}

// castPoint is the pixel where the near-field cast offset (ox, oy) from
// (x, yg) lands on a ground plane whose horizon is d pixels above yg:
// offsets up the picture (oy < 0) are foreshortened by d/(d-oy), so that
// they approach the horizon and never reach it; offsets down the picture
// (towards the camera) stay as they are.
func castPoint(x, yg, ox, oy, d float32) (int, int) {
	if oy < 0 {
		k := d / (d - oy)
		ox, oy = ox*k, oy*k
	}
	return int(math.Round(float64(x + ox))), int(math.Round(float64(yg + oy)))
}

// EstimateForeground returns the foreground colours (planar linear RGB,
// w x h) that the composite uses for the frame src with matte alpha (both
// planar host data): the source where the matte is 0 or 1, and in the
// soft band the estimate of GainCompositeLook. It exists so that the
// estimate can be measured (vfx bench look).
func EstimateForeground(ctx context.Context, dev kernels.Device, src, alpha []float32, w, h int) ([]float32, error) {
	if len(src) != 3*w*h || len(alpha) != w*h {
		return nil, errors.New("render: estimate foreground: wrong data sizes")
	}
	r, err := New(ctx, dev, Params{Width: w, Height: h})
	if err != nil {
		return nil, err
	}
	defer r.Close()
	var imgs []kernels.Image
	defer func() {
		for _, m := range imgs {
			dev.Free(m)
		}
	}()
	mk := func(c int, data []float32) (kernels.Image, error) {
		m, err := dev.NewImage(w, h, c)
		if err != nil {
			return nil, err
		}
		imgs = append(imgs, m)
		if data != nil {
			err = dev.WritePixels(m, data)
		}
		return m, err
	}
	s, err := mk(3, src)
	if err != nil {
		return nil, err
	}
	a, err := mk(1, alpha)
	if err != nil {
		return nil, err
	}
	zero, err := mk(3, nil)
	if err != nil {
		return nil, err
	}
	dst, err := mk(3, nil)
	if err != nil {
		return nil, err
	}
	lf, c := r.low, r.comp
	err = steps(
		namedStep{"resize", func() error { return r.ops.ResizeArea(lf.srcLow, s) }},
		namedStep{"resize", func() error { return r.ops.ResizeArea(lf.alphaLow, a) }},
		namedStep{"resize", func() error { return r.ops.ResizeArea(lf.alphaQ, lf.alphaLow) }},
	)
	if err == nil {
		err = c.foregroundEstimates(lf)
	}
	if err == nil {
		// Gain 1 over a black background: a*F.
		look := kernels.CompositeLook{FgLow: c.look.fm, BgOldLow: c.look.bm}
		err = step("composite", r.ops.GainCompositeLook(dst, s, a, lf.ones3, zero, nil, nil, look, 0, maxGain))
	}
	if err != nil {
		return nil, err
	}
	out, err := dev.ReadPixels(dst)
	if err != nil {
		return nil, err
	}
	n := w * h
	for i, av := range alpha {
		for c := 0; c < 3; c++ {
			if av > 0 {
				out[c*n+i] /= av
			} else {
				out[c*n+i] = src[c*n+i]
			}
		}
	}
	return out, nil
}

func abs(v int) int {
	if v < 0 {
		return -v
	}
	return v
}
