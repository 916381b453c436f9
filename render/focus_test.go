package render

import (
	"math"
	"testing"

	"github.com/vfxrender/vfx/frame"
	"github.com/vfxrender/vfx/render/plate"
	"github.com/vfxrender/vfx/render/prompt"
)

// TestFocusSigma: the defocus takes the plate's edge width to the target
// in quadrature; none for a deep focus, an unknown width, a plate already
// as soft or a defocus under focusMin; capped at the limit.
func TestFocusSigma(t *testing.T) {
	for _, c := range []struct {
		f                     prompt.Focus
		plate, subject, limit float64
		want                  float64
	}{
		{prompt.FocusMatch, 1, 2, 16, math.Sqrt(3)},
		{prompt.FocusMatch, 0.9, 5, 16, math.Sqrt(25 - 0.81)},
		{prompt.FocusShallow, 1, 2, 16, math.Sqrt(35)},
		{prompt.FocusShallow, 7, 2, 16, 0},
		{prompt.FocusDeep, 1, 2, 16, 0},
		{prompt.FocusMatch, 2, 1, 16, 0},
		{prompt.FocusMatch, 2, 2, 16, 0},
		{prompt.FocusMatch, 0, 2, 16, 0},
		{prompt.FocusMatch, 1, 0, 16, 0},
		{prompt.FocusMatch, 1, math.NaN(), 16, 0},
		{prompt.FocusMatch, 1, 1.04, 16, 0},       // sqrt(0.0816) = 0.286 < focusMin
		{prompt.FocusMatch, 1, 1.045, 16, 0.3031}, // just over focusMin
		{prompt.FocusMatch, 1, 8, 4, 4},
	} {
		got := focusSigma(c.f, c.plate, c.subject, c.limit)
		if math.Abs(got-c.want) > 1e-3 {
			t.Errorf("%v plate %.2f subject %.2f: sigma %.4f, want %.4f", c.f, c.plate, c.subject, got, c.want)
		}
	}
}

// focusScene is a subject with soft stripes (steps blurred by a Gaussian
// of sigma 1.5 px) in a rectangle matte, and a sharp checkerboard plate.
func focusScene(w, h int) (scene, *frame.HostFrame) {
	s := scene{w: w, h: h, src: make([]float32, 3*w*h), alpha: make([]float32, w*h)}
	n := w * h
	for y := range h {
		for x := range w {
			i := y*w + x
			v := 0.2
			for e := 4.0; e < float64(w); e += 16 {
				sign := 1.0
				if int(e/16)%2 == 1 {
					sign = -1
				}
				v += sign * 0.25 * 0.5 * (1 + math.Erf((float64(x)+0.5-e)/(1.5*math.Sqrt2)))
			}
			in := x >= 10 && x < w/2 && y >= 10 && y < h-10
			for c := range 3 {
				s.src[c*n+i] = 0.1
				if in {
					s.src[c*n+i] = float32(v)
				}
			}
			if in {
				s.alpha[i] = 1
			}
		}
	}
	ref, _ := frame.New(frame.RGB24, w, h)
	for y := range h {
		for x := range w {
			c := byte(40)
			if (x/12+y/12)%2 == 0 {
				c = 200
			}
			copy(ref.Planes[0][y*ref.Strides[0]+3*x:], []byte{c, c, c})
		}
	}
	return s, ref
}

// TestMatchFocus: a sharp plate behind a soft subject is defocused on the
// first frame so that the output's plate and subject edge widths are
// within 1.5x (more apart without matching); a shallow focus
// defocuses the plate past the subject (here to the cap, 3.6 px); a deep focus and NoFocusMatch
// keep it sharp.
func TestMatchFocus(t *testing.T) {
	d := newDev(t)
	const w, h = 320, 240
	s, ref := focusScene(w, h)
	bgW := make([]float32, w*h)
	for i, a := range s.alpha {
		bgW[i] = 1 - a
	}
	ratio := func(p Params) (float64, float64) {
		p.Reference, p.Seed, p.Width, p.Height = ref, 1, w, h
		out, r := render(t, d, p, s, nil)
		lum := make([]float32, w*h)
		for i := range lum {
			lum[i] = 0.2126*out[i] + 0.7152*out[w*h+i] + 0.0722*out[2*w*h+i]
		}
		sub, pl := plate.Measure(lum, w, h, s.alpha), plate.Measure(lum, w, h, bgW)
		if sub.Edge == 0 || pl.Edge == 0 {
			t.Fatalf("%+v: edge widths subject %.3f plate %.3f", p, sub.Edge, pl.Edge)
		}
		sigma, done := r.Defocus()
		if !done && !p.NoFocusMatch && p.Prompt != "deep focus" {
			t.Fatalf("%+v: focus not matched after the first frame", p)
		}
		return pl.Edge / sub.Edge, sigma
	}
	off, s0 := ratio(Params{NoFocusMatch: true})
	on, s1 := ratio(Params{})
	deep, s2 := ratio(Params{Prompt: "deep focus"})
	shallow, s3 := ratio(Params{Prompt: "shallow focus"})
	t.Logf("plate / subject edge width: off %.3f, matched %.3f (sigma %.2f), deep %.3f, shallow %.3f (sigma %.2f)", off, on, s1, deep, shallow, s3)
	if !(off < 1/1.5) || s0 != 0 {
		t.Errorf("NoFocusMatch: ratio %.3f (sigma %.2f), want a sharp plate (< 1/1.5) and no defocus", off, s0)
	}
	if !(on >= 1/1.5 && on <= 1.5) || !(s1 > 0) {
		t.Errorf("matched: ratio %.3f (sigma %.2f), want within 1.5x", on, s1)
	}
	if deep != off || s2 != 0 {
		t.Errorf("deep focus: ratio %.3f (sigma %.2f), want the unmatched %.3f", deep, s2, off)
	}
	if !(shallow > 1.5) || !(s3 > s1) {
		t.Errorf("shallow focus: ratio %.3f (sigma %.2f), want > 1.5 (the defocus at its cap, 1.5%% of the short side)", shallow, s3)
	}
}
