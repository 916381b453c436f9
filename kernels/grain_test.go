package kernels

import (
	"math"
	"testing"
)

// TestGrainNoiseStats: GrainNoise is zero-mean, unit-variance, bounded
// and uncorrelated between neighbours; another seed gives another field.
func TestGrainNoiseStats(t *testing.T) {
	const w, h = 256, 256
	var s, s2, sxy, diff float64
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			n := float64(GrainNoise(x, y, 1))
			if math.Abs(n) > 3.46 {
				t.Fatalf("noise %v out of range", n)
			}
			s += n
			s2 += n * n
			sxy += n * float64(GrainNoise(x+1, y, 1))
			diff += math.Abs(n - float64(GrainNoise(x, y, 2)))
		}
	}
	N := float64(w * h)
	if m, v, c := s/N, s2/N, sxy/N; math.Abs(m) > 0.02 || math.Abs(v-1) > 0.03 || math.Abs(c) > 0.02 {
		t.Fatalf("mean %v variance %v neighbour correlation %v", m, v, c)
	}
	if diff/N < 0.5 {
		t.Fatalf("seeds 1 and 2 give nearly the same noise (mean |diff| %v)", diff/N)
	}
}

// TestAddGrain checks the formula, that pixels with a <= 0 are not
// written, that the grain scales with a, and determinism.
func TestAddGrain(t *testing.T) {
	d := NewCPU(2)
	const w, h = 37, 23
	src := make([]float32, 3*w*h)
	al := make([]float32, w*h)
	for i := range al {
		al[i] = float32(i%5) / 4 // 0, .25, .5, .75, 1
		for c := 0; c < 3; c++ {
			src[c*w*h+i] = float32((i*7+c*3)%11) / 10
		}
	}
	si, ai := img(t, d, w, h, 3, src), img(t, d, w, h, 1, al)
	marker := make([]float32, 3*w*h)
	for i := range marker {
		marker[i] = -7
	}
	dst := img(t, d, w, h, 3, marker)
	const amount = 0.05
	if err := d.AddGrain(dst, si, ai, 99, amount); err != nil {
		t.Fatal(err)
	}
	got, _ := d.ReadPixels(dst)
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			i := y*w + x
			for c := 0; c < 3; c++ {
				g := got[c*w*h+i]
				if al[i] == 0 {
					if g != -7 {
						t.Fatalf("pixel %d,%d with a=0 written: %v", x, y, g)
					}
					continue
				}
				sq := math.Sqrt(float64(src[c*w*h+i])) + float64(al[i])*amount*float64(GrainNoise(x, y, 99))
				want := math.Max(sq, 0) * math.Max(sq, 0)
				if math.Abs(float64(g)-want) > 1e-6 {
					t.Fatalf("pixel %d,%d,%d: %v want %v", x, y, c, g, want)
				}
			}
		}
	}
	// In place: the same result.
	if err := d.AddGrain(si, si, ai, 99, amount); err != nil {
		t.Fatal(err)
	}
	again, _ := d.ReadPixels(si)
	for i := range got {
		if al[i%(w*h)] > 0 && again[i] != got[i] {
			t.Fatalf("in place differs at %d", i)
		}
	}
	// Shape errors.
	if err := d.AddGrain(dst, img(t, d, w, h, 1, nil), nil, 1, 0.1); err == nil {
		t.Fatal("channel mismatch accepted")
	}
}

// TestGainCompositeLookGrain checks CompositeLook's grain against the
// exact formula (sqrt(Y) becomes max(sqrt(Y) + t, 0)) on the composite
// without grain, within the approximate 1/sqrt's error: pixels with
// a == 0 are unchanged, others follow it with the tile read at the
// offsets; grainInvSqrt is within 0.2%; and a GrainAmount without a tile
// is refused.
func TestGainCompositeLookGrain(t *testing.T) {
	d := NewCPU(3)
	const w, h, lw, lh, maxV = 41, 29, 9, 7, 1.5
	rng := newRNG(5)
	n := w * h
	src := img(t, d, w, h, 3, randVals(rng, 3*n, 0, 1))
	al := randAlpha(rng, n)
	for i := range al {
		if i%7 == 0 {
			al[i] = 0
		}
		if i%11 == 0 {
			al[i] = 1
		}
	}
	alpha := img(t, d, w, h, 1, al)
	gain := img(t, d, lw, lh, 3, randVals(rng, 3*lw*lh, 0.5, 2))
	bg := img(t, d, w, h, 3, randVals(rng, 3*n, 0, 1))
	const gw, gh, gx, gy, amt = 13, 5, 17, 3, 0.08
	tile := randVals(rng, gw*gh, -3, 3)
	grain := img(t, d, gw, gh, 1, tile)
	plain, withG := img(t, d, w, h, 3, nil), img(t, d, w, h, 3, nil)
	if err := d.GainCompositeLook(plain, src, alpha, gain, bg, nil, nil, CompositeLook{}, 0, maxV); err != nil {
		t.Fatal(err)
	}
	look := CompositeLook{Grain: grain, GrainAmount: amt, GrainX: gx, GrainY: gy}
	if err := d.GainCompositeLook(withG, src, alpha, gain, bg, nil, nil, look, 0, maxV); err != nil {
		t.Fatal(err)
	}
	p, _ := d.ReadPixels(plain)
	g, _ := d.ReadPixels(withG)
	changed := 0
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			i := y*w + x
			q := [3]float64{float64(p[i]), float64(p[n+i]), float64(p[2*n+i])}
			if al[i] == 0 {
				for c := range 3 {
					if g[c*n+i] != p[c*n+i] {
						t.Fatalf("pixel %d,%d with a=0 changed", x, y)
					}
				}
				continue
			}
			tv := float64(al[i]) * amt * float64(tile[((y+gy)%gh)*gw+(x+gx)%gw])
			l := 0.2126*q[0] + 0.7152*q[1] + 0.0722*q[2]
			for c := range 3 {
				var want float64
				lf := math.Max(l, 1e-8)
				s := math.Max(math.Sqrt(lf)+tv, 0)
				want = q[c] * s * s / lf
				want = math.Min(want, maxV)
				// 1/sqrt within 0.2%: f = (1+t r)^2 within 0.4% |t r|(1+|t r|).
				tr := math.Abs(tv) / math.Sqrt(math.Max(l, 1e-8))
				if math.Abs(float64(g[c*n+i])-want) > 1e-5+0.004*tr*(1+tr)*q[c] {
					t.Fatalf("pixel %d,%d,%d: %v want %v", x, y, c, g[c*n+i], want)
				}
				if g[c*n+i] != p[c*n+i] {
					changed++
				}
			}
		}
	}
	if changed < n {
		t.Fatalf("only %d values changed by the grain", changed)
	}
	if err := d.GainCompositeLook(withG, src, alpha, gain, bg, nil, nil, CompositeLook{GrainAmount: 0.1}, 0, maxV); err == nil {
		t.Fatal("GrainAmount without a tile accepted")
	}
}
