package render

import (
	"math"
	"testing"
)

// edgeScene is a disc whose matte ramps from 1 to 0 over 8 px outside
// radius 24 (a wide soft band), at the working resolution, with the gain
// in on the matte's 1/2 side and out beyond it (per channel).
func edgeScene(t *testing.T, in, out [3]float32) (*lowFrame, []float32) {
	t.Helper()
	d := newDev(t)
	s := makeScene(96, 80, [3]float32{0.5, 0.4, 0.3})
	n := s.w * s.h
	gain := make([]float32, 3*n)
	for y := 0; y < s.h; y++ {
		for x := 0; x < s.w; x++ {
			i := y*s.w + x
			r := math.Hypot(float64(x)+0.5-48, float64(y)+0.5-40)
			a := float32(math.Min(1, math.Max(0, (32-r)/8)))
			s.alpha[i] = a
			for c := 0; c < 3; c++ {
				if a >= 0.5 {
					gain[c*n+i] = in[c]
				} else {
					gain[c*n+i] = out[c]
				}
			}
		}
	}
	f := lowScene(t, d, s, false)
	if err := d.Ops().ResizeArea(f.alphaQ, f.alphaLow); err != nil {
		t.Fatal(err)
	}
	if err := d.WritePixels(f.gain, gain); err != nil {
		t.Fatal(err)
	}
	e, err := newEdgeGainStage(d, d.Ops(), s.w, s.h, edgeGainSigma)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.free)
	if err := e.run(f); err != nil {
		t.Fatal(err)
	}
	g, err := d.ReadPixels(f.gain)
	if err != nil {
		t.Fatal(err)
	}
	return f, append(g, s.alpha...)
}

// TestEdgeGainBoundsTheSoftBand: where the gain beyond the matte's 1/2
// contour is above the subject's (a key that lights the front more than
// the silhouette), the soft band's gain is brought down to at most
// t*g + (1 - t)*(the subject's plus at most 15% of the excess: the band's own weights
// a^4 count a little), t = min(1, 2a): the band's excess
// fades with the alpha; at and above 1/2 nothing changes.
func TestEdgeGainBoundsTheSoftBand(t *testing.T) {
	in, out := [3]float32{1.2, 1.1, 1.0}, [3]float32{2, 1.8, 3}
	f, g := edgeScene(t, in, out)
	n := f.w * f.h
	alpha := g[3*n:]
	var band, lowered int
	for i, a := range alpha {
		for c := 0; c < 3; c++ {
			v := g[c*n+i]
			switch {
			case a >= 0.5:
				if v != in[c] {
					t.Fatalf("pixel %d (a %.3f) channel %d: gain %v, want %v unchanged", i, a, c, v, in[c])
				}
			case a > 0:
				tw := min(1, 2*a)
				if bound := tw*out[c] + (1-tw)*(in[c]+0.15*(out[c]-in[c])); v > bound+1e-5 {
					t.Fatalf("pixel %d (a %.3f) channel %d: gain %v, want <= %v", i, a, c, v, bound)
				}
				if v < in[c]-1e-5 {
					t.Fatalf("pixel %d (a %.3f) channel %d: gain %v below the subject's %v", i, a, c, v, in[c])
				}
				if a < 0.4 { // t <= 0.8: at least a fifth of the excess gone
					band++
					if v < out[c]-0.1 {
						lowered++
					}
				}
			}
		}
	}
	if band == 0 || lowered != band {
		t.Errorf("soft band: %d of %d gains lowered", lowered, band)
	}
}

// TestEdgeGainKeepsADarkBand: the gain is only ever lowered: where the
// gain beyond the contour is below the subject's (the side a key leaves
// dark), the soft band keeps it.
func TestEdgeGainKeepsADarkBand(t *testing.T) {
	in, out := [3]float32{1.2, 1.1, 1.0}, [3]float32{0.5, 0.4, 0.6}
	f, g := edgeScene(t, in, out)
	n := f.w * f.h
	for i, a := range g[3*n:] {
		for c := 0; c < 3; c++ {
			want := out[c]
			if a >= 0.5 {
				want = in[c]
			}
			if v := g[c*n+i]; math.Abs(float64(v-want)) > 1e-5 {
				t.Fatalf("pixel %d (a %.3f) channel %d: gain %v, want %v", i, a, c, v, want)
			}
		}
	}
}

// BenchmarkEdgeGain1080p is the edge gain stage alone on a 1080p frame's
// working resolution (480 x 270), the disc scene's matte.
func BenchmarkEdgeGain1080p(b *testing.B) {
	d := newDev(b)
	lw, lh := lowSize(1920, 1080)
	s := makeScene(lw, lh, [3]float32{0.5, 0.4, 0.3})
	f, err := newLowFrame(d, d.Ops(), lw, lh, false)
	if err != nil {
		b.Fatal(err)
	}
	defer f.free(d)
	if err := d.WritePixels(f.alphaLow, s.alpha); err != nil {
		b.Fatal(err)
	}
	if err := d.Ops().ResizeArea(f.alphaQ, f.alphaLow); err != nil {
		b.Fatal(err)
	}
	if err := d.Ops().Fill(f.gain, []float32{1.2, 1.1, 1}); err != nil {
		b.Fatal(err)
	}
	e, err := newEdgeGainStage(d, d.Ops(), lw, lh, edgeGainSigma)
	if err != nil {
		b.Fatal(err)
	}
	defer e.free()
	b.ReportAllocs()
	for b.Loop() {
		if err := e.run(f); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(b.Elapsed().Seconds()*1e3/float64(b.N), "ms/frame")
}
