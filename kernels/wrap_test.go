package kernels

import (
	"math"
	"testing"
)

// TestWrapLight: the formula per pixel, with 1 - wide above, at and
// below eps, NaN wide, a zero band and a full one; in place; eps = 1
// (the plain held-out blur); bad eps and shapes refused.
func TestWrapLight(t *testing.T) {
	d := NewCPU(2)
	defer d.Close()
	nan := float32(math.NaN())
	const eps = 0.01
	wide := []float32{0, 0.5, 0.99, 0.995, 1, nan, 0.2, 0.75}
	band := []float32{0, 0.3, 0.9, 0.9, 1, 0.5, 1, 0.1}
	held := []float32{
		0.4, 0.2, 0.005, 0.001, 0, 0.3, 0.6, 0.1,
		0.8, 0.1, 0.008, 0.004, 0, 0.2, 0.7, 0.2,
		0.2, 0.3, 0.001, 0.002, 0, 0.1, 0.5, 0.05,
	}
	// (1 - band) / max(1 - wide, eps) in float32 steps: 1, 1.4, 0.1 /
	// 0.01 (1 - wide at eps), 0.1 / eps (below), 0 (a full band), 0.5 /
	// eps (NaN wide), 0, 0.9 / 0.25.
	scale := make([]float32, len(wide))
	for i := range scale {
		den := 1 - wide[i]
		if !(den > eps) {
			den = eps
		}
		scale[i] = (1 - band[i]) / den
	}
	for i, want := range []float64{1, 1.4, 10, 10, 0, 50, 0, 3.6} {
		if math.Abs(float64(scale[i])-want) > 1e-4*want {
			t.Fatalf("scale %d: %v, want %v", i, scale[i], want)
		}
	}
	n := len(wide)
	for _, sz := range [][2]int{{8, 1}, {2, 4}} {
		w, h := sz[0], sz[1]
		hi := img(t, d, w, h, 3, held)
		wi := img(t, d, w, h, 1, wide)
		bi := img(t, d, w, h, 1, band)
		dst := img(t, d, w, h, 3, nil)
		if err := d.WrapLight(dst, hi, wi, bi, eps); err != nil {
			t.Fatal(err)
		}
		got := pixels(t, d, dst)
		for c := range 3 {
			for i := range n {
				if want := held[c*n+i] * scale[i]; got[c*n+i] != want {
					t.Errorf("%v: channel %d pixel %d: got %v, want %v", sz, c, i, got[c*n+i], want)
				}
			}
		}
		if err := d.WrapLight(hi, hi, wi, bi, eps); err != nil {
			t.Fatal(err)
		}
		if p := pixels(t, d, hi); !equal32(p, got) {
			t.Errorf("%v: in place %v, want %v", sz, p, got)
		}
	}
	// A half-covered pixel: the normalised mean of the visible plate.
	// held = blur(P(1-A)) = 0.3 with blur(A) = 0.5: the visible plate is
	// 0.6; a band of 0.25 gives 0.45.
	one := func(v float32, c int) Image {
		s := make([]float32, c)
		for i := range s {
			s[i] = v
		}
		return img(t, d, 1, 1, c, s)
	}
	dst := img(t, d, 1, 1, 3, nil)
	if err := d.WrapLight(dst, one(0.3, 3), one(0.5, 1), one(0.25, 1), 1e-3); err != nil {
		t.Fatal(err)
	}
	if p := pixels(t, d, dst); math.Abs(float64(p[0])-0.45) > 1e-6 {
		t.Errorf("normalised: got %v, want 0.45", p[0])
	}
	// eps = 1: no normalisation, held * (1 - band).
	if err := d.WrapLight(dst, one(0.3, 3), one(0.5, 1), one(0.25, 1), 1); err != nil {
		t.Fatal(err)
	}
	if p := pixels(t, d, dst); math.Abs(float64(p[0])-0.225) > 1e-6 {
		t.Errorf("eps 1: got %v, want 0.225", p[0])
	}
	h3, a1 := img(t, d, 8, 1, 3, held), img(t, d, 8, 1, 1, wide)
	for name, err := range map[string]error{
		"eps 0":         d.WrapLight(dst, h3, a1, a1, 0),
		"eps < 0":       d.WrapLight(h3, h3, a1, a1, -1),
		"eps NaN":       d.WrapLight(h3, h3, a1, a1, nan),
		"eps inf":       d.WrapLight(h3, h3, a1, a1, float32(math.Inf(1))),
		"size":          d.WrapLight(dst, h3, a1, a1, eps),
		"held channels": d.WrapLight(h3, a1, a1, a1, eps),
		"wide channels": d.WrapLight(h3, h3, h3, a1, eps),
		"band channels": d.WrapLight(h3, h3, a1, h3, eps),
		"dst channels":  d.WrapLight(a1, h3, a1, a1, eps),
		"nil band":      d.WrapLight(h3, h3, a1, nil, eps),
		"band size":     d.WrapLight(h3, h3, a1, img(t, d, 4, 2, 1, nil), eps),
	} {
		if err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}
