package kernels

import (
	"errors"
	"math"
	"testing"
)

// refHueAB is the (Y, a, b) of linear RGB in HueBound's plane, literally:
// sRGB's XYZ matrix, the D65 white.
func refHueAB(r, g, b float64) (float64, float64, float64) {
	x := (0.4124*r + 0.3576*g + 0.1805*b) / 0.95047
	y := 0.2126*r + 0.7152*g + 0.0722*b
	z := (0.0193*r + 0.1192*g + 0.9505*b) / 1.08883
	return y, 500 * (x - y), 200 * (y - z)
}

// hueAngle is the angle (radians) between two (α, β) vectors.
func hueAngle(a0, b0, a1, b1 float64) float64 {
	return math.Abs(math.Atan2(a0*b1-b0*a1, a0*a1+b0*b1))
}

// gainsOf returns src / ref per value (ref > 0).
func gainsOf(src, ref []float32) []float32 {
	g := make([]float32, len(src))
	for i := range g {
		g[i] = src[i] / ref[i]
	}
	return g
}

// applied is ref * gain (float64, per value).
func applied(ref, gain []float32, i, n int) (float64, float64, float64) {
	return float64(ref[i]) * float64(gain[i]), float64(ref[n+i]) * float64(gain[n+i]), float64(ref[2*n+i]) * float64(gain[2*n+i])
}

func TestHueBound(t *testing.T) {
	d := NewCPU(2)
	rng := newRNG(71)
	p := HueParams{MaxHue: 0.2, C0: 15, C1: 45, MaxGain: 100}
	for _, sz := range testSizes {
		w, h := sz[0], sz[1]
		n := w * h
		ref := randVals(rng, 3*n, 0.02, 1)
		gain := gainsOf(randVals(rng, 3*n, 0.02, 1), ref)
		out := img(t, d, w, h, 3, nil)
		if err := d.HueBound(out, img(t, d, w, h, 3, gain), img(t, d, w, h, 3, ref), nil, p); err != nil {
			t.Fatal(err)
		}
		got := pixels(t, d, out)
		changed := 0
		for i := range n {
			ry, ra, rb := refHueAB(float64(ref[i]), float64(ref[n+i]), float64(ref[2*n+i]))
			l0, va, vb := refHueAB(applied(ref, gain, i, n))
			l1, oa, ob := refHueAB(applied(ref, got, i, n))
			rc := math.Hypot(ra, rb) / ry
			allowed := math.Pi
			if rc >= float64(p.C1) {
				allowed = float64(p.MaxHue)
			} else if rc > float64(p.C0) {
				u := (rc - float64(p.C0)) / float64(p.C1-p.C0)
				u = u * u * (3 - 2*u)
				allowed = math.Pi - u*(math.Pi-float64(p.MaxHue))
			}
			before := hueAngle(ra, rb, va, vb)
			after := hueAngle(ra, rb, oa, ob)
			same := got[i] == gain[i] && got[n+i] == gain[n+i] && got[2*n+i] == gain[2*n+i]
			switch {
			case before <= allowed-1e-9:
				if !same {
					t.Fatalf("%dx%d px %d: within the bound (%.4f <= %.4f) but changed", w, h, i, before, allowed)
				}
			case got[i] == 0 || got[n+i] == 0 || got[2*n+i] == 0:
				// Turned out of gamut and clamped at 0: the hue is not
				// exact.
			case before > allowed+1e-6:
				changed++
				if math.Abs(after-allowed) > 1e-5 {
					t.Fatalf("%dx%d px %d: angle %.5f after, want the bound %.5f (before %.5f)", w, h, i, after, allowed, before)
				}
				if math.Abs(math.Hypot(oa, ob)-math.Hypot(va, vb)) > 1e-4*math.Hypot(va, vb) || math.Abs(l1-l0) > 1e-5 {
					t.Fatalf("%dx%d px %d: chroma %.5f -> %.5f, Y %.5f -> %.5f: want both kept", w, h, i, math.Hypot(va, vb), math.Hypot(oa, ob), l0, l1)
				}
			}
		}
		if n >= 100 && changed == 0 {
			t.Fatalf("%dx%d: no pixel was bounded", w, h)
		}
		// With a mask: where it is 0 the gain is kept, elsewhere the
		// result is the unmasked one.
		mk := randAlpha(rng, n)
		if err := d.HueBound(out, img(t, d, w, h, 3, gain), img(t, d, w, h, 3, ref), img(t, d, w, h, 1, mk), p); err != nil {
			t.Fatal(err)
		}
		masked := pixels(t, d, out)
		for i, v := range masked {
			want := got[i]
			if mk[i%n] == 0 {
				want = gain[i]
			}
			if v != want {
				t.Fatalf("%dx%d value %d (mask %v): %v, want %v", w, h, i, mk[i%n], v, want)
			}
		}
	}
}

func TestHueBoundKeeps(t *testing.T) {
	d := NewCPU(2)
	rng := newRNG(72)
	w, h := 16, 9
	n := w * h
	ref := randVals(rng, 3*n, 0.02, 1)
	// A change of exposure keeps every hue: a grey gain of 2.5.
	exposure := make([]float32, 3*n)
	for i := range exposure {
		exposure[i] = 2.5
	}
	// Grey references (chroma 0 <= C0) bound nothing.
	grey := make([]float32, 3*n)
	for i := range n {
		grey[i], grey[n+i], grey[2*n+i] = ref[i], ref[i], ref[i]
	}
	other := gainsOf(randVals(rng, 3*n, 0.02, 1), ref)
	for _, c := range []struct {
		name      string
		gain, ref []float32
		p         HueParams
	}{
		{"exposure", exposure, ref, HueParams{MaxHue: 0.05, C0: 0, C1: 10, MaxGain: 4}},
		{"grey reference", other, grey, HueParams{MaxHue: 0, C0: 3, C1: 10, MaxGain: 4}},
		{"MaxHue π", other, ref, HueParams{MaxHue: math.Pi, C0: 0, C1: 10, MaxGain: 4}},
	} {
		out := img(t, d, w, h, 3, nil)
		if err := d.HueBound(out, img(t, d, w, h, 3, c.gain), img(t, d, w, h, 3, c.ref), nil, c.p); err != nil {
			t.Fatal(err)
		}
		got := pixels(t, d, out)
		for i := range got {
			if got[i] != c.gain[i] {
				t.Fatalf("%s: value %d changed %v -> %v", c.name, i, c.gain[i], got[i])
			}
		}
	}
	// MaxHue 0 gives every coloured pixel its reference's hue, in place
	// (dst == gain).
	G := img(t, d, w, h, 3, other)
	if err := d.HueBound(G, G, img(t, d, w, h, 3, ref), nil, HueParams{MaxHue: 0, C0: 0, C1: 1e-3, MaxGain: 1000}); err != nil {
		t.Fatal(err)
	}
	got := pixels(t, d, G)
	for i := range n {
		_, ra, rb := refHueAB(float64(ref[i]), float64(ref[n+i]), float64(ref[2*n+i]))
		_, oa, ob := refHueAB(applied(ref, got, i, n))
		clamped := got[i] == 0 || got[n+i] == 0 || got[2*n+i] == 0
		if !clamped && math.Hypot(ra, rb) > 1e-2 && hueAngle(ra, rb, oa, ob) > 1e-5 {
			t.Fatalf("MaxHue 0: px %d is %.5f rad from its reference's hue", i, hueAngle(ra, rb, oa, ob))
		}
	}
}

// TestHueBoundGainLimits: gains are clamped to [0, MaxGain], and a channel
// whose reference is at the LMS floor or below keeps its gain.
func TestHueBoundGainLimits(t *testing.T) {
	d := NewCPU(2)
	// Pixel 0: a saturated orange reference turned to green by its gain.
	// Pixel 1: the same with a reference blue of 0.
	ref := []float32{0.9, 0.9, 0.4, 0.4, 0.05, 0}
	gain := []float32{0.3, 0.3, 2, 2, 1, 1}
	p := HueParams{MaxHue: 0.1, C0: 1, C1: 2, MaxGain: 1.5}
	out := img(t, d, 2, 1, 3, nil)
	if err := d.HueBound(out, img(t, d, 2, 1, 3, gain), img(t, d, 2, 1, 3, ref), nil, p); err != nil {
		t.Fatal(err)
	}
	got := pixels(t, d, out)
	for i, v := range got {
		if !(v >= 0 && v <= p.MaxGain) && !(i == 5 && v == gain[5]) {
			t.Errorf("value %d: gain %v outside [0, %v]", i, v, p.MaxGain)
		}
	}
	if got[5] != gain[5] {
		t.Errorf("blue of pixel 1 (reference 0): gain %v, want %v kept", got[5], gain[5])
	}
	if got[0] == gain[0] && got[2] == gain[2] && got[4] == gain[4] {
		t.Errorf("pixel 0 was not bounded: %v", got)
	}
	// The edge: MaxGain exactly at the largest gain that the bound gives
	// changes nothing; a tenth below it clamps.
	free := HueParams{MaxHue: 0.1, C0: 1, C1: 2, MaxGain: 1000}
	if err := d.HueBound(out, img(t, d, 2, 1, 3, gain), img(t, d, 2, 1, 3, ref), nil, free); err != nil {
		t.Fatal(err)
	}
	u := pixels(t, d, out)
	top := max(u[0], u[2], u[4])
	for _, c := range []struct {
		maxGain float32
		clamped bool
	}{{top, false}, {0.9 * top, true}} {
		q := free
		q.MaxGain = c.maxGain
		if err := d.HueBound(out, img(t, d, 2, 1, 3, gain), img(t, d, 2, 1, 3, ref), nil, q); err != nil {
			t.Fatal(err)
		}
		v := pixels(t, d, out)
		if got := max(v[0], v[2], v[4]) < top; got != c.clamped {
			t.Errorf("MaxGain %v: largest gain %v, top %v: clamped %v, want %v", c.maxGain, max(v[0], v[2], v[4]), top, got, c.clamped)
		}
	}
}

func TestHueBoundErrors(t *testing.T) {
	d := NewCPU(2)
	a, b, r := img(t, d, 4, 3, 3, nil), img(t, d, 4, 3, 3, nil), img(t, d, 4, 3, 3, nil)
	ok := HueParams{MaxHue: 0.2, C0: 15, C1: 45, MaxGain: 4}
	for name, err := range map[string]error{
		"MaxHue < 0":      d.HueBound(a, b, r, nil, HueParams{MaxHue: -1e-7, C0: 0, C1: 1, MaxGain: 4}),
		"MaxHue > π":      d.HueBound(a, b, r, nil, HueParams{MaxHue: math.Nextafter32(math.Pi, 4), C0: 0, C1: 1, MaxGain: 4}),
		"MaxHue NaN":      d.HueBound(a, b, r, nil, HueParams{MaxHue: float32(math.NaN()), C0: 0, C1: 1, MaxGain: 4}),
		"C0 = C1":         d.HueBound(a, b, r, nil, HueParams{MaxHue: 0.2, C0: 0.1, C1: 0.1, MaxGain: 4}),
		"C0 < 0":          d.HueBound(a, b, r, nil, HueParams{MaxHue: 0.2, C0: -0.1, C1: 0.1, MaxGain: 4}),
		"C1 infinite":     d.HueBound(a, b, r, nil, HueParams{MaxHue: 0.2, C0: 0, C1: float32(math.Inf(1)), MaxGain: 4}),
		"MaxGain 0":       d.HueBound(a, b, r, nil, HueParams{MaxHue: 0.2, C0: 0, C1: 1, MaxGain: 0}),
		"MaxGain ∞":       d.HueBound(a, b, r, nil, HueParams{MaxHue: 0.2, C0: 0, C1: 1, MaxGain: float32(math.Inf(1))}),
		"ref aliases dst": d.HueBound(a, b, a, nil, ok),
		"ref size":        d.HueBound(a, b, img(t, d, 4, 4, 3, nil), nil, ok),
		"ref channels":    d.HueBound(a, b, img(t, d, 4, 3, 1, nil), nil, ok),
		"gain channels":   d.HueBound(a, img(t, d, 4, 3, 1, nil), r, nil, ok),
		"dst channels":    d.HueBound(img(t, d, 4, 3, 1, nil), b, r, nil, ok),
		"nil ref":         d.HueBound(a, b, nil, nil, ok),
		"gain size":       d.HueBound(a, img(t, d, 3, 3, 3, nil), r, nil, ok),
		"mask channels":   d.HueBound(a, b, r, img(t, d, 4, 3, 3, nil), ok),
		"mask size":       d.HueBound(a, b, r, img(t, d, 4, 4, 1, nil), ok),
	} {
		if !errors.Is(err, ErrShape) {
			t.Errorf("%s: %v, want ErrShape", name, err)
		}
	}
	// The edges that are allowed.
	for _, p := range []HueParams{{MaxHue: 0, C0: 0, C1: 1e-7, MaxGain: 1e-7}, {MaxHue: math.Pi, C0: 0, C1: 1, MaxGain: 4}} {
		if err := d.HueBound(a, b, r, nil, p); err != nil {
			t.Errorf("%+v: %v", p, err)
		}
	}
	if err := d.HueBound(a, b, foreign{}, nil, ok); !errors.Is(err, ErrForeignImage) {
		t.Errorf("foreign ref: %v, want ErrForeignImage", err)
	}
	if err := d.HueBound(a, b, r, foreign{}, ok); !errors.Is(err, ErrForeignImage) {
		t.Errorf("foreign mask: %v, want ErrForeignImage", err)
	}
}
