package plate

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestMeasureGrain: the grain estimate reads white noise of known
// sigma on a half-textured image (a fine sine pattern, whose diagonal
// detail alone reads as grain of sigma 0.023, beside a ramp with an edge)
// within 15%, and reads it clean as nearly grainless: the flattest
// blocks are measured, not the texture.
func TestMeasureGrain(t *testing.T) {
	const w, h = 256, 192
	rng := rand.New(rand.NewPCG(3, 4))
	for _, sigma := range []float64{0, 0.005, 0.02} {
		lum := make([]float32, w*h)
		for y := range h {
			for x := range w {
				// Half fine texture, half a smooth ramp with an edge.
				v := 0.5 + 0.15*math.Sin(float64(x)*0.7)*math.Sin(float64(y)*0.9)
				if x >= w/2 {
					v = 0.3 + 0.3*float64(x)/w
					if y > h/2 {
						v *= 0.6
					}
				}
				v += sigma * rng.NormFloat64()
				lum[y*w+x] = float32(v * v)
			}
		}
		st := Measure(lum, w, h, nil)
		if sigma == 0 {
			if st.Grain > 0.002 {
				t.Errorf("clean texture: grain %.4f, want < 0.002", st.Grain)
			}
			continue
		}
		if math.Abs(st.Grain/sigma-1) > 0.15 {
			t.Errorf("sigma %.3f: grain %.4f", sigma, st.Grain)
		}
	}
}

// TestEdgeWidth: vertical steps blurred by a Gaussian of known sigma (plus
// a little grain) read back sigma and the sampling's own width in
// quadrature, hypot(sigma, sharpEdge), within 8% from 0.5 to 6 px; a sharp
// step reads at most 1.1 px, a flat picture has no edges (0) and a step
// blurred by 20 px reads the cap, 8.
func TestEdgeWidth(t *testing.T) {
	const w, h = 128, 96
	rng := rand.New(rand.NewPCG(1, 2))
	step := func(sigma float64, amp float64) []float32 {
		lum := make([]float32, w*h)
		for y := range h {
			for x := range w {
				v := 0.3
				for _, e := range []float64{w / 4, w / 2, 3 * w / 4} {
					d := (float64(x) + 0.5 - e)
					if sigma > 0 {
						v += amp * 0.5 * (1 + math.Erf(d/(sigma*math.Sqrt2))) * (1 - 2*float64(int(e)/(w/2)%2))
					} else if d > 0 {
						v += amp * (1 - 2*float64(int(e)/(w/2)%2))
					}
				}
				v += 0.001 * rng.NormFloat64()
				lum[y*w+x] = float32(v * v)
			}
		}
		return lum
	}
	for _, sigma := range []float64{0.5, 1, 1.5, 2, 3, 4, 6} {
		st := Measure(step(sigma, 0.3), w, h, nil)
		if want := math.Hypot(sigma, sharpEdge); math.Abs(st.Edge/want-1) > 0.08 {
			t.Errorf("sigma %.1f: edge width %.3f", sigma, st.Edge)
		}
	}
	if st := Measure(step(0, 0.3), w, h, nil); st.Edge > 1.1 || st.Edge <= 0 {
		t.Errorf("sharp step: edge width %.3f, want in (0, 1.1]", st.Edge)
	}
	if st := Measure(step(20, 0.3), w, h, nil); st.Edge != 8 {
		t.Errorf("sigma 20: edge width %.3f, want the cap 8", st.Edge)
	}
	if st := Measure(step(2, 0), w, h, nil); st.Edge != 0 {
		t.Errorf("flat: edge width %.3f, want 0", st.Edge)
	}
}

// BenchmarkMeasure1080p: the grain and edge width without the black
// level, as matched focus measures the plate and the subject once per job
// (render/focus.go measureEdges), at 1080p.
func BenchmarkMeasure1080p(b *testing.B) {
	const w, h = 1920, 1080
	rng := rand.New(rand.NewPCG(5, 6))
	lum := make([]float32, w*h)
	for i := range lum {
		x, y := i%w, i/w
		v := 0.4 + 0.2*math.Sin(float64(x)*0.05)*math.Cos(float64(y)*0.07) + 0.01*rng.NormFloat64()
		lum[i] = float32(v * v)
	}
	b.ResetTimer()
	for b.Loop() {
		_, in, v := MeasureBase(lum, w, h, nil, false, true)
		if EdgeWidth(v, w, h, in, 0) == 0 {
			b.Fatal("no edges")
		}
	}
}

// TestKthLargest: against a sort, on random values with many ties, for
// every k, and on one value.
func TestKthLargest(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 9))
	for _, n := range []int{1, 2, 3, 10, 101} {
		g := make([]float64, n)
		for i := range g {
			g[i] = float64(rng.IntN(7))
		}
		want := append([]float64(nil), g...)
		slices.Sort(want)
		for k := 1; k <= n; k++ {
			if got := kthLargest(append([]float64(nil), g...), k); got != want[n-k] {
				t.Fatalf("n %d k %d: %v, want %v", n, k, got, want[n-k])
			}
		}
	}
}

// gaussBlurRef is gaussBlur as plain loops: every output the clamped taps
// summed in order, horizontally then vertically.
func gaussBlurRef(src []float32, w, h int, sigma float64) []float32 {
	k := gaussKernel(sigma)
	r := len(k) / 2
	tmp := make([]float32, w*h)
	out := make([]float32, w*h)
	for y := range h {
		row := src[y*w:][:w]
		for x := range w {
			var s float32
			for j, kv := range k {
				s += kv * row[min(max(x+j-r, 0), w-1)]
			}
			tmp[y*w+x] = s
		}
	}
	for y := range h {
		for x := range w {
			var s float32
			for j, kv := range k {
				s += kv * tmp[min(max(y+j-r, 0), h-1)*w+x]
			}
			out[y*w+x] = s
		}
	}
	return out
}

// TestGaussBlurMatchesRef: gaussBlur against the plain loops, bit for
// bit, on images narrower and shorter than the kernel, as wide as it,
// and large enough to split over the processors, with negative values
// and zeros.
func TestGaussBlurMatchesRef(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, sz := range [][2]int{{1, 1}, {5, 3}, {13, 13}, {14, 2}, {40, 70}, {333, 97}, {1920, 64}} {
		w, h := sz[0], sz[1]
		src := make([]float32, w*h)
		for i := range src {
			if rng.IntN(7) != 0 {
				src[i] = float32(rng.NormFloat64())
			}
		}
		for _, sigma := range []float64{2, 0.7, 5} {
			got, want := gaussBlur(src, w, h, sigma), gaussBlurRef(src, w, h, sigma)
			for i := range want {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
					t.Fatalf("%dx%d sigma %v: pixel %d: %v, want %v", w, h, sigma, i, got[i], want[i])
				}
			}
		}
	}
}

// BenchmarkGaussBlur1080p: the edge-width measure's blur (sigma 2) of a
// 1080p plate.
func BenchmarkGaussBlur1080p(b *testing.B) {
	const w, h = 1920, 1080
	rng := rand.New(rand.NewPCG(5, 6))
	v := make([]float32, w*h)
	for i := range v {
		v[i] = float32(rng.Float64())
	}
	for b.Loop() {
		gaussBlur(v, w, h, plateBlurSigma)
	}
}
