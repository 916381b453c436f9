package look

import (
	"math"
	"testing"
)

// TestRimSide: on a disc lit by a rim from the right (the bench's
// "backlit rim light"), a band brightened where it faces right reads its
// gain over the left's; a band lit all round reads 1; the far side's
// light reads below 1.
func TestRimSide(t *testing.T) {
	const w, h = 100, 80
	n := w * h
	s := &lookSubject{w: w, h: h, src: make([]float32, 3*n), alpha: make([]float32, n)}
	dist := make([]float32, n)
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			i := y*w + x
			d := 30 - math.Hypot(float64(x)+0.5-50, float64(y)+0.5-40)
			if d > 0 {
				s.alpha[i], dist[i] = 1, float32(d)
			}
			for c := 0; c < 3; c++ {
				s.src[c*n+i] = 0.3
			}
		}
	}
	lit := func(gain func(x, y float64) float64) []float32 {
		out := make([]float32, 3*n)
		for i := 0; i < n; i++ {
			g := gain(float64(i%w)+0.5-50, 40-float64(i/w)-0.5)
			for c := 0; c < 3; c++ {
				out[c*n+i] = s.src[c*n+i] * float32(g)
			}
		}
		return out
	}
	lx, ly, ok := rimDir("backlit rim light")
	if !ok || !(lx > 0.9) {
		t.Fatalf("rim direction %v, %v (%v), want to the right", lx, ly, ok)
	}
	for _, c := range []struct {
		name   string
		gain   func(x, y float64) float64
		lo, hi float64
	}{
		{"light's side", func(x, y float64) float64 {
			return 1 + math.Max(0, (x*lx+y*ly)/math.Hypot(x, y))
		}, 1.6, 2.0},
		{"all round", func(x, y float64) float64 { return 2 }, 1, 1},
		{"far side", func(x, y float64) float64 {
			return 1 + math.Max(0, -(x*lx+y*ly)/math.Hypot(x, y))
		}, 0.5, 0.63},
	} {
		if v := rimSide("backlit rim light", s, lit(c.gain), dist); !(v >= c.lo-1e-9 && v <= c.hi+1e-9) {
			t.Errorf("%s: rim side %.4f, want within [%.2f, %.2f]", c.name, v, c.lo, c.hi)
		}
	}
	if v := rimSide("strong light from the left", s, s.src, dist); !math.IsNaN(v) {
		t.Errorf("no rim light: %v, want NaN", v)
	}
}
