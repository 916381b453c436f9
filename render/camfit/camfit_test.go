package camfit

import (
	"math"
	"testing"
)

// scene is a smooth texture seen at offset (ox, oy): the background moved
// by (ox, oy) pixels.
func scene(w, h int, ox, oy float64) []float32 {
	lum := make([]float32, w*h)
	for y := range h {
		for x := range w {
			u, v := float64(x)-ox, float64(y)-oy
			lum[y*w+x] = float32(0.5 + 0.2*math.Sin(u*0.21+0.5*math.Sin(v*0.13)) + 0.15*math.Cos(v*0.17-0.3*math.Sin(u*0.11)))
		}
	}
	return lum
}

// TestShift: a known background motion is recovered within 0.05 px, also
// with a subject moving the other way inside its matte; a matte that
// covers the frame, a still frame and mismatched sizes are handled.
func TestShift(t *testing.T) {
	const w, h = 160, 120
	for _, d := range [][2]float64{{1.3, -0.7}, {-4.2, 2.5}, {0, 0}} {
		prev, cur := scene(w, h, 0, 0), scene(w, h, d[0], d[1])
		a := make([]float32, w*h)
		for y := 40; y < 80; y++ {
			for x := 60; x < 100; x++ {
				a[y*w+x] = 1
				cur[y*w+x] = float32(x%7) / 7 // a subject that does not follow
			}
		}
		dx, dy, ok := Shift(prev, a, cur, a, w, h, 2)
		if !ok || math.Abs(dx-d[0]) > 0.05 || math.Abs(dy-d[1]) > 0.05 {
			t.Errorf("motion %v: got (%.3f, %.3f) ok %v", d, dx, dy, ok)
		}
	}
	full := make([]float32, w*h)
	for i := range full {
		full[i] = 1
	}
	if _, _, ok := Shift(scene(w, h, 0, 0), full, scene(w, h, 1, 0), full, w, h, 2); ok {
		t.Error("a matte over the whole frame: ok")
	}
	if _, _, ok := Shift(scene(w, h, 0, 0), nil, scene(w, h-1, 1, 0), nil, w, h, 2); ok {
		t.Error("mismatched sizes: ok")
	}
}
