package look

import (
	"math"
	"testing"
)

// TestHaloRatio: the halo reads light added outside the subject (a glow
// beyond 2 px, a brightened soft band), not the soft matte's own subject,
// the shadows or the grain, and never a darkening.
func TestHaloRatio(t *testing.T) {
	const w = 40
	n := w
	// A row: subject (A = 1) on x < 10, a soft band x = 10..13 (A 0.8,
	// 0.6, 0.4, 0.2), then background; out = x - 11 px outside.
	a, out := make([]float32, n), make([]float32, n)
	ys, yb := make([]float64, n), make([]float64, n)
	sh, grain := make([]float32, n), make([]float32, 3*n)
	for x := 0; x < n; x++ {
		switch {
		case x < 10:
			a[x] = 1
		case x < 14:
			a[x] = 1 - 0.2*float32(x-9)
		}
		out[x] = float32(max(0, x-11))
		ys[x], yb[x] = 0.3, 0.5
		sh[x] = 0.2
		grain[x], grain[n+x], grain[2*n+x] = 1, 1, 1
	}
	plain := func() []float64 {
		yc := make([]float64, n)
		for i := range yc {
			yc[i] = float64(a[i])*ys[i] + (1-float64(a[i]))*yb[i]*(1-float64(sh[i]))
		}
		return yc
	}
	// The region: the soft band's A < 0.5 pixels (x = 12, 13) and the
	// ring 2 < out <= 18 (x = 14..29): 18 pixels of backdrop 0.5.
	const bsum = 18 * 0.5
	if v := haloRatio1(plain(), yb, ys, grain, sh, a, out); v != 0 {
		t.Errorf("plain composite: halo %v, want 0", v)
	}
	// A glow of 0.09 on the ring's pixels x = 14..23 (10 px).
	yc := plain()
	for x := 14; x < 24; x++ {
		yc[x] += 0.09
	}
	if v, want := haloRatio1(yc, yb, ys, grain, sh, a, out), 10*0.09/bsum; math.Abs(v-want) > 1e-12 {
		t.Errorf("glow: halo %v, want %v", v, want)
	}
	// Outside the region (inside the 0.5 contour, or beyond the ring): 0.
	yc = plain()
	yc[5], yc[11], yc[30], yc[39] = 1, 1, 1, 1
	if v := haloRatio1(yc, yb, ys, grain, sh, a, out); v != 0 {
		t.Errorf("brightening outside the region: halo %v, want 0", v)
	}
	// The soft band's pixel x = 12 (A = 0.4) brightened by 0.1: read.
	yc = plain()
	yc[12] += 0.1
	if v, want := haloRatio1(yc, yb, ys, grain, sh, a, out), 0.1/bsum; math.Abs(v-want) > 1e-12 {
		t.Errorf("soft band: halo %v, want %v", v, want)
	}
	// Darkening only (a deeper shadow): 0.
	yc = plain()
	for x := 12; x < 30; x++ {
		yc[x] *= 0.5
	}
	if v := haloRatio1(yc, yb, ys, grain, sh, a, out); v != 0 {
		t.Errorf("darkening: halo %v, want 0", v)
	}
	// Grain of gain 1.1 everywhere is divided out.
	yc = plain()
	for i := range yc {
		yc[i] *= 1.1
		grain[i], grain[n+i], grain[2*n+i] = 1.1, 1.1, 1.1
	}
	if v := haloRatio1(yc, yb, ys, grain, sh, a, out); !(v < 1e-12) {
		t.Errorf("grain: halo %v, want 0", v)
	}
	// The wrap's light in the region: 0.05 on every region pixel.
	yw := make([]float64, n)
	for x := range yw {
		yw[x] = 0.05
	}
	if _, wr := haloRatio(plain(), yb, ys, grain, sh, a, out, yw, yw); len(wr) != 2 || math.Abs(wr[0]-18*0.05/bsum) > 1e-12 || wr[1] != wr[0] {
		t.Errorf("wrap share %v, want two of %v", wr, 18*0.05/bsum)
	}
	// No backdrop light there: NaN.
	if v := haloRatio1(yc, make([]float64, n), ys, grain, sh, a, out); !math.IsNaN(v) {
		t.Errorf("black backdrop: halo %v, want NaN", v)
	}
}

// haloRatio1 is haloRatio's halo with no parts.
func haloRatio1(yc, yb, ys []float64, grain, sh, a, out []float32) float64 {
	v, parts := haloRatio(yc, yb, ys, grain, sh, a, out)
	if len(parts) != 0 {
		return math.Inf(1)
	}
	return v
}

// TestRelightLight: the light the relight gain adds to the foreground,
// per pixel: fg - fg/gain in luminance, 0 where the gain darkens or is 0.
func TestRelightLight(t *testing.T) {
	const n = 3
	fg := []float32{0.4, 0.4, 0.4, 0.4, 0.4, 0.4, 0.4, 0.4, 0.4}
	gain := []float32{2, 0.5, 0, 2, 0.5, 0, 2, 0.5, 0}
	got := relightLight(fg, gain, n)
	if math.Abs(got[0]-0.2) > 1e-6 || got[1] != 0 || got[2] != 0 {
		t.Errorf("relight light %v, want [0.2 0 0]", got)
	}
}
