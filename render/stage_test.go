package render

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/vfxrender/vfx/kernels"
	"github.com/vfxrender/vfx/render/prompt"
)

// lowScene is a lowFrame holding makeScene's disc (w and h at most
// lowShortSide, so the working resolution is the frame's).
func lowScene(t *testing.T, d kernels.Device, s scene, fill bool) *lowFrame {
	t.Helper()
	f, err := newLowFrame(d, d.Ops(), s.w, s.h, fill)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.free(d) })
	if err := d.WritePixels(f.srcLow, s.src); err != nil {
		t.Fatal(err)
	}
	if err := d.WritePixels(f.alphaLow, s.alpha); err != nil {
		t.Fatal(err)
	}
	return f
}

// testPlan is the plan of prompt over a neutral grey environment.
func testPlan(text string, hasRef, fill bool) *lightPlan {
	p := newLightPlan(text, rand.New(rand.NewPCG(1, 2)))
	var env [3]kernels.SH9
	for c := range env {
		env[c][0] = 0.5 / shC0
	}
	p.setEnvironment(env, hasRef, fill)
	return p
}

func TestLightPlan(t *testing.T) {
	rim := testPlan("backlit blue rim light", false, false)
	if !rim.haveRim || rim.relightMix != 1 {
		t.Fatalf("rim prompt: haveRim %v, relightMix %v", rim.haveRim, rim.relightMix)
	}
	// Fill mode folds the rims' term into the main light.
	fill := testPlan("backlit blue rim light", false, true)
	if fill.haveRim || fill.newSH[2][0] != rim.newSH[2][0]+rim.rimSH[2][0] {
		t.Fatalf("fill: haveRim %v, DC %v, want %v", fill.haveRim, fill.newSH[2][0], rim.newSH[2][0]+rim.rimSH[2][0])
	}
	if p := testPlan("strong light from the left", false, false); !p.hasKeyDir || p.parts.keyDir[0] >= 0 {
		t.Fatalf("key from the left: hasKeyDir %v, dir %v", p.hasKeyDir, p.parts.keyDir)
	}
	if p := testPlan("", true, false); p.hasKeyDir || p.relightMix != 0.7 {
		t.Fatalf("reference only: hasKeyDir %v, relightMix %v", p.hasKeyDir, p.relightMix)
	}
	if p := testPlan("", false, false); p.relightMix != 0.5 {
		t.Fatalf("no light: relightMix %v", p.relightMix)
	}
}

func TestNormalStage(t *testing.T) {
	d := newDev(t)
	s := makeScene(120, 80, [3]float32{0.5, 0.5, 0.5})
	f := lowScene(t, d, s, false)
	n, err := newNormalStage(d, d.Ops(), s.w, s.h, false, true)
	if err != nil {
		t.Fatal(err)
	}
	defer n.free()
	if err := n.run(f); err != nil {
		t.Fatal(err)
	}
	if !n.haveShape || math.Abs(n.shape[0]-60) > 1 || math.Abs(n.shape[1]-40) > 1 {
		t.Fatalf("shape centroid %v (have %v), want (60, 40)", n.shape[:2], n.haveShape)
	}
	nd := read(t, d, n.detailed())
	np := s.w * s.h
	at := func(x, y, c int) float32 { return nd[c*np+y*s.w+x] }
	// The disc's left edge faces left, its right edge right, its top up
	// (y up), its centre the camera.
	if !(at(35, 40, 0) < -0.3 && at(84, 40, 0) > 0.3 && at(60, 15, 1) > 0.3 && at(60, 40, 2) > 0.9) {
		t.Fatalf("normals: left x %v, right x %v, top y %v, centre z %v", at(35, 40, 0), at(84, 40, 0), at(60, 15, 1), at(60, 40, 2))
	}
	if n.nRim == nil {
		t.Fatal("no rim normals with a rim light")
	}
	fn, err := newNormalStage(d, d.Ops(), s.w, s.h, true, false)
	if err != nil {
		t.Fatal(err)
	}
	defer fn.free()
	if fn.smooth() != fn.fillNormals || fn.detailed() != fn.fillNormals || fn.nSmooth != nil {
		t.Fatal("fill mode: the normals are not the fixed dome alone")
	}
}

// fittedKey makes plan's key stage for s, runs the normals n on f and
// fits the key; it fails the test unless the frame is relit. The stage is
// freed at the test's end.
func fittedKey(t *testing.T, d kernels.Device, plan *lightPlan, s scene, f *lowFrame, n *normalStage) *keyStage {
	t.Helper()
	k, err := newKeyStage(d, d.Ops(), plan, s.w, s.h)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(k.free)
	if err := n.run(f); err != nil {
		t.Fatal(err)
	}
	relit, err := k.fit(f, n)
	if err != nil || !relit {
		t.Fatalf("fit: relit %v, %v", relit, err)
	}
	return k
}

func TestKeyStage(t *testing.T) {
	d := newDev(t)
	s := makeScene(120, 80, [3]float32{0.5, 0.5, 0.5})
	f := lowScene(t, d, s, false)
	n, err := newNormalStage(d, d.Ops(), s.w, s.h, false, false)
	if err != nil {
		t.Fatal(err)
	}
	defer n.free()
	plan := testPlan("strong light from the left", false, false)
	k := fittedKey(t, d, plan, s, f, n)
	if k.subjFill <= 0 || k.subjFill > plan.parts.fill {
		t.Fatalf("fill factor on the subject %v, want in (0, %v]", k.subjFill, plan.parts.fill)
	}
	if !k.lightFor(1) {
		t.Fatal("lightFor: not relit")
	}
	if err := k.relight(f, n, true); err != nil {
		t.Fatal(err)
	}
	out := read(t, d, f.relit)
	np := s.w * s.h
	left, right := out[np+40*s.w+30], out[np+40*s.w+89] // green, inside the disc
	if !(left > 1.5*right) {
		t.Fatalf("key from the left: left %v, right %v", left, right)
	}
	// Not relit: the source itself.
	if err := k.relight(f, n, false); err != nil {
		t.Fatal(err)
	}
	if got := read(t, d, f.relit); got[np+40*s.w+30] != s.src[np+40*s.w+30] {
		t.Fatalf("not relit: %v, source %v", got[np+40*s.w+30], s.src[np+40*s.w+30])
	}
}

// flatImage is a w x h image of colour c.
func flatImage(t *testing.T, d kernels.Device, w, h int, c [3]float32) kernels.Image {
	t.Helper()
	img := upload(t, d, w, h, 3, nil)
	if err := d.Ops().Fill(img, c[:]); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Free(img) })
	return img
}

func TestExposureStage(t *testing.T) {
	d := newDev(t)
	s := makeScene(120, 80, [3]float32{0.5, 0.5, 0.5})
	f := lowScene(t, d, s, false)
	e, err := newExposureStage(d, d.Ops(), s.w, s.h, s.w, s.h, false, true, prompt.Lighting{})
	if err != nil {
		t.Fatal(err)
	}
	defer e.free()
	// The old background is makeScene's (luminance about 0.114); a new one
	// twice as bright doubles the subject's light.
	oldLum := 0.2126*0.10 + 0.7152*0.12 + 0.0722*0.10
	bgLow := flatImage(t, d, s.w, s.h, [3]float32{float32(2 * oldLum), float32(2 * oldLum), float32(2 * oldLum)})
	bgQ := flatImage(t, d, s.w/2, s.h/2, [3]float32{0.2, 0.2, 0.2})
	if err := e.setBackground(f, nil, bgLow, bgQ, 1); err != nil {
		t.Fatal(err)
	}
	if err := d.Ops().Luma(f.luma, f.srcLow); err != nil {
		t.Fatal(err)
	}
	x, err := e.scene(f)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(x-2) > 0.05 {
		t.Fatalf("scene exposure %v, want 2", x)
	}
	if math.Abs(e.srcSubLum-0.5) > 0.03 {
		t.Fatalf("source subject luminance %v, want 0.5", e.srcSubLum)
	}
	if e.plate.active || e.blackTarget(kernels.LabStats{Std: [3]float64{1, 1, 1}}).Std[0] != 1 {
		t.Fatal("plate matching off, but active or a black level applied")
	}
}

// harmoniseInputs makes the harmonisation's inputs for scene s: its low
// frame with the quantised matte and the source as the relit image, and
// an exposure stage on it.
func harmoniseInputs(t *testing.T, d kernels.Device, s scene) (*lowFrame, *exposureStage) {
	t.Helper()
	f := lowScene(t, d, s, false)
	if err := d.Ops().ResizeArea(f.alphaQ, f.alphaLow); err != nil {
		t.Fatal(err)
	}
	if err := d.Ops().Copy(f.relit, f.srcLow); err != nil {
		t.Fatal(err)
	}
	e, err := newExposureStage(d, d.Ops(), s.w, s.h, s.w, s.h, false, true, prompt.Lighting{})
	if err != nil {
		t.Fatal(err)
	}
	return f, e
}

func TestHarmoniseStage(t *testing.T) {
	d := newDev(t)
	s := makeScene(120, 80, [3]float32{0.4, 0.4, 0.4})
	f, e := harmoniseInputs(t, d, s)
	defer e.free()
	for _, strength := range []float32{0, harmStrength(true, false)} {
		h, err := newHarmoniseStage(d, d.Ops(), s.w, s.h, strength, false)
		if err != nil {
			t.Fatal(err)
		}
		if err := h.setBackground(flatImage(t, d, s.w, s.h, [3]float32{0.6, 0.3, 0.1})); err != nil {
			t.Fatal(err)
		}
		if err := h.run(f, e, false); err != nil {
			t.Fatal(err)
		}
		g := read(t, d, f.gain)
		np := s.w * s.h
		i := 40*s.w + 60 // the disc's centre
		red, blue := g[i], g[2*np+i]
		h.free()
		if strength == 0 {
			if math.Abs(float64(red-1)) > 1e-3 || math.Abs(float64(blue-1)) > 1e-3 {
				t.Fatalf("strength 0: gain %v, %v, want 1", red, blue)
			}
			continue
		}
		// A warm background warms a grey subject: more red than blue.
		if !(red > blue*1.1) {
			t.Fatalf("warm background: gain red %v, blue %v", red, blue)
		}
	}
}

func TestCompositeStage(t *testing.T) {
	d := newDev(t)
	s := makeScene(120, 80, [3]float32{0.4, 0.4, 0.4})
	f := lowScene(t, d, s, false)
	if err := d.Ops().ResizeArea(f.alphaQ, f.alphaLow); err != nil {
		t.Fatal(err)
	}
	for _, text := range []string{"hard light from the left", "backlit rim light"} {
		plan := testPlan(text, false, false)
		c := newCompositeStage(d, d.Ops(), s.w, s.h, false)
		bgLow, env := flatImage(t, d, s.w, s.h, [3]float32{}), flatImage(t, d, 32, 16, [3]float32{})
		if err := c.setBackground(t.Context(), plan, flatRef(40, 30, [3]uint8{90, 120, 200}), nil, bgLow, env); err != nil {
			t.Fatal(err)
		}
		if err := c.setWrap(flatImage(t, d, s.w/2, s.h/2, [3]float32{0.5, 0.5, 0.5}), s.w, s.h, plan); err != nil {
			t.Fatal(err)
		}
		if want := map[bool]float32{false: 0.35, true: 0.55}[plan.light.Rim]; c.wrap != want {
			t.Fatalf("%q: wrap %v, want %v", text, c.wrap, want)
		}
		e, err := newExposureStage(d, d.Ops(), s.w, s.h, s.w, s.h, false, true, prompt.Lighting{})
		if err != nil {
			t.Fatal(err)
		}
		if err := c.prepare(f, e, 0, 0, nil); err != nil {
			t.Fatal(err)
		}
		// The wrap's matte is blurred: fractional near the disc's edge (radius 15.2 px at half resolution).
		ab := read(t, d, c.alphaBlur)
		if v := ab[20*(s.w/2)+30+13]; !(v > 0.01 && v < 0.99) {
			t.Fatalf("wrap matte at the edge %v", v)
		}
		// The disc stands 10 px above the bottom: a contact shadow.
		if !c.look.haveShadow {
			t.Fatalf("%q: no shadow under a subject in frame", text)
		}
		e.free()
		c.free()
	}
}

// TestHarmoniseHueBound: over a strongly coloured plate the harmonisation
// tints a grey subject toward the plate but turns a coloured subject's hue
// by at most hueBound's MaxHue (10°), where the transfer alone turns it
// further (issue 31, "tints, not dyes").
func TestHarmoniseHueBound(t *testing.T) {
	d := newDev(t)
	plate := [3]float32{0.05, 0.25, 0.6} // a blue-green plate
	maxDeg := float64(hueBound().MaxHue) * 180 / math.Pi
	for _, c := range []struct {
		name    string
		subject [3]float32
		grey    bool
	}{{"skin", [3]float32{0.5, 0.35, 0.25}, false}, {"olive", [3]float32{0.3, 0.33, 0.15}, false}, {"grey", [3]float32{0.4, 0.4, 0.4}, true}} {
		s := makeScene(120, 80, c.subject)
		f, e := harmoniseInputs(t, d, s)
		h, err := newHarmoniseStage(d, d.Ops(), s.w, s.h, harmStrength(true, false), false)
		if err != nil {
			t.Fatal(err)
		}
		if err := h.setBackground(flatImage(t, d, s.w, s.h, plate)); err != nil {
			t.Fatal(err)
		}
		i := 40*s.w + 60 // the disc's centre
		turn := func() (float64, float64) {
			g := read(t, d, f.gain)
			src := read(t, d, f.srcLow)
			np := s.w * s.h
			var in, out [3]float64
			for k := range 3 {
				in[k] = float64(src[k*np+i])
				out[k] = in[k] * float64(g[k*np+i])
			}
			ia, ib, _ := planeAB(in)
			oa, ob, oy := planeAB(out)
			return math.Abs(math.Atan2(ia*ob-ib*oa, ia*oa+ib*ob)) * 180 / math.Pi, math.Hypot(oa, ob) / oy
		}
		if err := h.transfer(f, e, false); err != nil {
			t.Fatal(err)
		}
		free, _ := turn()
		if err := h.run(f, e, false); err != nil {
			t.Fatal(err)
		}
		bounded, chroma := turn()
		h.free()
		e.free()
		t.Logf("%s: hue turn %.2f° by the transfer, %.2f° bounded; chroma after %.1f", c.name, free, bounded, chroma)
		if c.grey {
			// Tinted toward the blue-green plate: it gains chroma.
			if !(chroma > 5) {
				t.Errorf("grey subject: relative chroma %.2f after the harmonisation, want a tint (> 5)", chroma)
			}
			continue
		}
		if !(free > maxDeg+2) {
			t.Errorf("%s: the transfer alone turns the hue %.2f°, want more than the bound (the test needs a dyeing plate)", c.name, free)
		}
		if !(bounded <= maxDeg+0.01) {
			t.Errorf("%s: hue turned %.2f°, want <= %.0f°", c.name, bounded, maxDeg)
		}
	}
}

// planeAB is kernels.HueBound's (a, b, Y) of linear RGB.
func planeAB(c [3]float64) (float64, float64, float64) {
	x := (0.4124*c[0] + 0.3576*c[1] + 0.1805*c[2]) / 0.95047
	y := 0.2126*c[0] + 0.7152*c[1] + 0.0722*c[2]
	z := (0.0193*c[0] + 0.1192*c[1] + 0.9505*c[2]) / 1.08883
	return 500 * (x - y), 200 * (y - z), y
}

// TestExposureNightFloor: on a night plate much darker than the old
// background, the scene exposure darkens the subject (about 0.17); at
// night it is raised until the subject's median (source median times
// the light's intensity times the exposure) is nightShare of the plate's
// brightest tenth, and left alone when the subject is already that bright
// or the prompt is not night.
func TestExposureNightFloor(t *testing.T) {
	d := newDev(t)
	for _, c := range []struct {
		name    string
		subject float32
		light   prompt.Lighting
		floored bool
	}{
		{"night, dark subject", 0.05, prompt.Lighting{Time: prompt.TimeNight, Intensity: 0.5}, true},
		{"night, bright subject", 0.9, prompt.Lighting{Time: prompt.TimeNight, Intensity: 0.5}, false},
		{"day, dark subject", 0.05, prompt.Lighting{Time: prompt.TimeDay, Intensity: 0.5}, false},
	} {
		s := makeScene(120, 80, [3]float32{c.subject, c.subject, c.subject})
		f := lowScene(t, d, s, false)
		if err := d.Ops().ResizeArea(f.alphaQ, f.alphaLow); err != nil {
			t.Fatal(err)
		}
		e, err := newExposureStage(d, d.Ops(), s.w, s.h, s.w, s.h, false, true, c.light)
		if err != nil {
			t.Fatal(err)
		}
		// A night plate: black with a bright tenth (the moon, lamps) of 0.2.
		bg := make([]float32, 3*s.w*s.h)
		for i := range s.w * s.h / 10 {
			bg[i], bg[s.w*s.h+i], bg[2*s.w*s.h+i] = 0.2, 0.2, 0.2
		}
		bgLow := upload(t, d, s.w, s.h, 3, bg)
		if err := e.setBackground(f, nil, bgLow, flatImage(t, d, s.w/2, s.h/2, [3]float32{}), 1); err != nil {
			t.Fatal(err)
		}
		if err := d.Ops().Luma(f.luma, f.srcLow); err != nil {
			t.Fatal(err)
		}
		x, err := e.scene(f)
		e.free()
		if err != nil {
			t.Fatal(err)
		}
		own := math.Max(1.0/16, math.Min(maxGain, e.bgNewLum/e.bgOldLum)) // the scene's exposure
		median := float64(c.subject) * float64(c.light.Intensity) * x
		want := nightShare * 0.2
		t.Logf("%s: exposure %.4f, subject median %.4f, floor %.4f", c.name, x, median, want)
		if c.floored {
			if math.Abs(median-want) > 0.02*want {
				t.Errorf("%s: subject median %.4f, want the floor %.4f", c.name, median, want)
			}
			if !(x > 2*own) {
				t.Errorf("%s: exposure %.4f, the scene's own %.4f: want it raised", c.name, x, own)
			}
		} else if x != own {
			t.Errorf("%s: exposure %.4f, want the scene's own %.4f", c.name, x, own)
		}
	}
}
