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

// TestBuilder: pyramids a Builder makes, alternating two as a camera lock
// does, fit the same motions as Pyramid's, frame after frame; they hold
// their own copy of the luminance (the caller's buffer is overwritten
// between frames here); and once sized, a frame's Build and FitScratch
// allocate nothing.
func TestBuilder(t *testing.T) {
	const w, h = 160, 120
	a := make([]float32, w*h)
	for y := 40; y < 80; y++ {
		for x := 60; x < 100; x++ {
			a[y*w+x] = 1
		}
	}
	var bs [2]Builder
	var res []float64
	lum := make([]float32, w*h) // the caller's one read-back buffer
	var prev []Level
	for i := range 5 {
		copy(lum, scene(w, h, 1.5*float64(i), -0.5*float64(i)))
		cur := bs[i%2].Build(lum, a, w, h, 2)
		if prev != nil {
			got, gotY, ok := FitScratch(prev, cur, 2, &res)
			want, wantY, wok := Fit(Pyramid(scene(w, h, 1.5*float64(i-1), -0.5*float64(i-1)), a, w, h, 2),
				Pyramid(scene(w, h, 1.5*float64(i), -0.5*float64(i)), a, w, h, 2), 2)
			if ok != wok || got != want || gotY != wantY {
				t.Fatalf("frame %d: Builder fit (%v, %v, %v), Pyramid fit (%v, %v, %v)", i, got, gotY, ok, want, wantY, wok)
			}
			if math.Abs(got-1.5) > 0.05 || math.Abs(gotY+0.5) > 0.05 {
				t.Errorf("frame %d: motion (%.3f, %.3f), want (1.5, -0.5)", i, got, gotY)
			}
		}
		prev = cur
	}
	k := 0
	allocs := testing.AllocsPerRun(4, func() {
		k++
		cur := bs[k%2].Build(lum, a, w, h, 2)
		FitScratch(bs[(k+1)%2].levels, cur, 2, &res)
	})
	if allocs != 0 {
		t.Errorf("a sized Builder's frame allocates %v times, want 0", allocs)
	}
}
