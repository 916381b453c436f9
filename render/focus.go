package render

import (
	"fmt"
	"math"

	"github.com/vfxrender/vfx/kernels"
	"github.com/vfxrender/vfx/render/plate"
	"github.com/vfxrender/vfx/render/prompt"
)

// Matched focus (issue 31 item 2): a plate sharper than the subject is
// defocused toward the subject's sharpness, as a compositor matches focus
// to the footage's depth of field. Both are measured by their edge width
// (package plate: the Gaussian sigma of the strongest edges, in output
// pixels): the plate's in New (full resolution, setupPlate), the
// subject's on the frame whose composite measures its grain
// (measureSubject: the matte's interior after relight). Measured widths
// add in quadrature (a step blurred by s reads about hypot(s, 0.85)), so
// the plate is blurred once, on that frame, by
// sqrt(target^2 - plate^2) with a Gaussian (kernels GaussianBlur), its
// grain put back (regrain), and stays so for the job: no per-frame cost. The target is the subject's
// width; with a shallow focus ("shallow focus", "bokeh", "blurred
// background": prompt.FocusShallow) focusShallow times it; a deep focus
// ("deep focus", "sharp background") keeps the plate as it is. A plate
// softer than the subject is left as it is: sharpening a plate invents
// detail, and defocusing the subject would blur the full-resolution source
// and matte every frame.

const (
	// focusShallow: a shallow focus takes the plate's edge width to this
	// many times the subject's.
	focusShallow = 3.0
	// focusMin: a defocus under this sigma (output pixels) is not done.
	focusMin = 0.3
	// focusMax caps the defocus (a share of the output's shorter side:
	// 16 px at 1080p).
	focusMax = 0.015
)

// focusSigma is the defocus (Gaussian sigma, pixels) that takes a plate
// whose edge width is plateEdge toward the target set by f and the
// subject's edge width subject, at most maxSigma; 0 for none (either
// width unknown, a deep focus, or the plate already as soft).
func focusSigma(f prompt.Focus, plateEdge, subject, maxSigma float64) float64 {
	if f == prompt.FocusDeep || !(plateEdge > 0) || !(subject > 0) {
		return 0
	}
	target := subject
	if f == prompt.FocusShallow {
		target *= focusShallow
	}
	if target <= plateEdge {
		return 0
	}
	s := math.Sqrt(target*target - plateEdge*plateEdge)
	if s < focusMin {
		return 0
	}
	return math.Min(s, maxSigma)
}

// matchFocus defocuses the plate c.bg once, on the frame whose composite
// measured the subject (e's plate match), and keeps the sigma used in
// c.defocus. The background codes FrameFromHost reuses are made again.
func (c *compositeStage) matchFocus(e *exposureStage) error {
	pm := &e.plate
	if c.focusDone || !pm.edges || !pm.measured {
		return nil
	}
	c.focusDone = true
	s := focusSigma(c.focus, pm.plate.Edge, pm.subject.Edge, focusMax*float64(min(c.w, c.h)))
	if s == 0 {
		return nil
	}
	blurred, err := c.dev.NewImage(c.w, c.h, 3)
	if err != nil {
		return fmt.Errorf("render: allocate: %w", err)
	}
	if err := c.ops.GaussianBlur(blurred, c.bg, float32(s)); err != nil {
		c.dev.Free(blurred)
		return step("focus", err)
	}
	c.dev.Free(c.bg)
	c.bg, c.bgCodes, c.defocus = blurred, nil, s
	if err := regrain(c.dev, c.bg, pm.plate.Grain, s, pm.seed); err != nil {
		return step("focus", err)
	}
	// The blur's full-resolution scratch is one-off (see matchGrain).
	if t, ok := c.dev.(kernels.PoolTrimmer); ok {
		t.TrimPool()
	}
	return nil
}

// regrain puts back into the defocused plate bg the grain the blur (sigma
// s) took out of its measured grain g: a lens defocuses the scene, not the
// film's or sensor's grain. White noise blurred by a Gaussian of sigma s
// keeps 1/(2 sqrt(pi) s) of its deviation, so grain of deviation
// g sqrt(1 - 1/(4 pi s^2)) is added (kernels AddGrain, static: the plate
// is a still), and the plate clamped to [0, 1] (kernels Clamp).
func regrain(dev kernels.Device, bg kernels.Image, g, s float64, seed uint32) error {
	gr, ok := dev.(kernels.GrainOps)
	if !ok || g < plateMinGrain {
		return nil
	}
	amount := g * math.Sqrt(math.Max(0, 1-1/(4*math.Pi*s*s)))
	if amount < plateMinGrain {
		return nil
	}
	if err := gr.AddGrain(bg, bg, nil, seed^0x666f6375, float32(amount)); err != nil { // "focu"
		return err
	}
	// The grain stays within the plate's range.
	if cl, ok := dev.(kernels.ClampOps); ok {
		return cl.Clamp(bg, bg, 0, 1)
	}
	return nil
}

// measureEdges measures st's edge width on lum (w x h) over the weights
// wt (nil: everywhere), as plate.Measure does, when edges is set.
func measureEdges(lum []float32, w, h int, wt []float32, edges bool) plate.Stats {
	st, in, v := plate.MeasureBase(lum, w, h, wt, false, edges)
	if edges && in != nil {
		st.Edge = plate.EdgeWidth(v, w, h, in, st.Grain)
	}
	return st
}

// Defocus returns the plate's defocus (Gaussian sigma, output pixels; 0
// for none) and whether focus has been matched yet.
func (r *Renderer) Defocus() (sigma float64, done bool) {
	if r.comp == nil {
		return 0, false
	}
	return r.comp.defocus, r.comp.focusDone
}
