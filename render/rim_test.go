package render

import (
	"math"
	"testing"
)

// TestRimBandShape: the rims' band shape is rimPeak where a silhouette
// normal faces the light's side in the picture plane, negative (clamped
// away by the renderer) on the far side, 0 where the surface faces the
// camera; a light straight behind lights the whole silhouette.
func TestRimBandShape(t *testing.T) {
	at := func(p [9]float64, n [3]float32) float64 { return shDot(p, shBasis(n)) }
	s := float32(math.Sqrt(0.5))
	right := rimBandShape([3]float32{s, 0, -s})
	for _, c := range []struct {
		n    [3]float32
		want float64
	}{
		{[3]float32{1, 0, 0}, rimPeak},              // the light's side
		{[3]float32{-1, 0, 0}, -rimPeak},            // the far side (clamped to 0)
		{[3]float32{0, 1, 0}, 0},                    // across the light
		{[3]float32{0, 0, 1}, 0},                    // facing the camera
		{[3]float32{s, 0, s}, float64(rimPeak * s)}, // half turned
	} {
		if v := at(right, c.n); math.Abs(v-c.want) > 1e-5 {
			t.Errorf("light from the right, normal %v: %v, want %v", c.n, v, c.want)
		}
	}
	behind := rimBandShape([3]float32{0, 0, -1})
	for _, n := range [][3]float32{{1, 0, 0}, {-1, 0, 0}, {0, 1, 0}, {0, -1, 0}} {
		if v := at(behind, n); math.Abs(v-rimPeak) > 1e-5 {
			t.Errorf("light behind, normal %v: %v, want %v", n, v, float64(rimPeak))
		}
	}
	if v := at(behind, [3]float32{0, 0, 1}); math.Abs(v) > 1e-5 {
		t.Errorf("light behind, facing the camera: %v, want 0", v)
	}
}

// TestRimLightsItsSide: on a coloured disc, a rim light from the right
// brightens the right edge band of the relit subject by its own colour
// (relit = relit0 (1 + w rel): the light added is the subject's albedo
// times the rim's), leaves the left edge and the interior exactly as they
// were, and its shape is never negative.
func TestRimLightsItsSide(t *testing.T) {
	d := newDev(t)
	s := makeScene(120, 80, [3]float32{0.5, 0.3, 0.2})
	f := lowScene(t, d, s, false)
	n, err := newNormalStage(d, d.Ops(), s.w, s.h, false, true)
	if err != nil {
		t.Fatal(err)
	}
	defer n.free()
	plan := testPlan("white rim light from the right", false, false)
	if !plan.haveRim {
		t.Fatal("no rim in the plan")
	}
	k := fittedKey(t, d, plan, s, f, n)
	if !k.lightFor(1) {
		t.Fatal("lightFor: not relit")
	}
	if err := k.relight(f, n, true); err != nil {
		t.Fatal(err)
	}
	rimW, relit, relit0 := read(t, d, k.rimW), read(t, d, f.relit), read(t, d, k.relit0)
	np := s.w * s.h
	for i, v := range rimW {
		if !(v >= 0 && v <= rimPeak) {
			t.Fatalf("rim shape[%d] = %v, want within [0, %v]", i, v, float64(rimPeak))
		}
	}
	// The disc: centre (60, 40), radius 30.4. Band pixels one px inside
	// its edge at the right (90, 40) and the left (30, 40); the centre.
	gain := func(x, y, c int) float64 { i := c*np + y*s.w + x; return float64(relit[i] / relit0[i]) }
	if g := gain(89, 40, 1); !(g > 1.5) {
		t.Errorf("right edge: rim gain %.3f, want > 1.5", g)
	}
	for _, p := range [][2]int{{30, 40}, {60, 40}} {
		for c := 0; c < 3; c++ {
			if g := gain(p[0], p[1], c); g != 1 {
				t.Errorf("pixel %v channel %d: rim gain %v, want exactly 1 (no rim)", p, c, g)
			}
		}
	}
	// The rim multiplies the subject's own colour: relit = relit0 * (1 +
	// w rel), so the light added is proportional to relit0 per channel.
	w := float64(rimW[40*s.w+89])
	for c := 0; c < 3; c++ {
		if g, want := gain(89, 40, c), 1+w*float64(k.rimRel[c]); math.Abs(g-want) > 1e-4*want {
			t.Errorf("right edge channel %d: gain %.5f, want 1 + w rel = %.5f", c, g, want)
		}
	}
}

// TestRimNeverPastTheMatte: with a rim light, the clean foreground pass
// is 0 wherever the matte is 0 (the rim is a gain on the subject,
// weighted by the alpha), and brighter on the rim's side of the edge
// than on the other.
func TestRimNeverPastTheMatte(t *testing.T) {
	d := newDev(t)
	s := makeScene(120, 80, [3]float32{0.4, 0.4, 0.4})
	_, r := render(t, d, Params{Prompt: "white rim light from the right", Seed: 3, Width: s.w, Height: s.h}, s, nil)
	ps := framePasses(t, d, r, s, s.alpha)
	fg, a, gain := read(t, d, ps.Foreground), read(t, d, ps.Alpha), read(t, d, ps.Gain)
	np := s.w * s.h
	for i := range a {
		if a[i] == 0 && (fg[i] != 0 || fg[np+i] != 0 || fg[2*np+i] != 0) {
			t.Fatalf("pixel %d: alpha 0, foreground %v %v %v", i, fg[i], fg[np+i], fg[2*np+i])
		}
	}
	gr, gl := gain[40*s.w+88], gain[40*s.w+31]
	if !(gr > 1.3*gl) {
		t.Errorf("gain at the right edge %.3f, left edge %.3f: want the rim's side 1.3x brighter", gr, gl)
	}
}
