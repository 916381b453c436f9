package kernels

import (
	"fmt"
	"math"
	"testing"
)

func refEDT(mask []float32, w, h int, th float32) []float64 {
	out := make([]float64, w*h)
	for y := range h {
		for x := range w {
			if mask[y*w+x] < th {
				continue
			}
			best := math.Inf(1)
			for j := range h {
				for i := range w {
					if mask[j*w+i] < th {
						dx, dy := float64(i-x), float64(j-y)
						best = math.Min(best, math.Sqrt(dx*dx+dy*dy))
					}
				}
			}
			if math.IsInf(best, 1) {
				best = float64(w + h)
			}
			out[y*w+x] = best
		}
	}
	return out
}

func TestDistanceTransform(t *testing.T) {
	rng := newRNG(50)
	sizes := append([][2]int{{300, 40}, {61, 47}}, testSizes...)
	for _, workers := range []int{1, 2} {
		d := NewCPU(workers)
		for _, sz := range sizes {
			for _, density := range []float64{0.02, 0.3, 0.9} {
				t.Run(fmt.Sprintf("w%d/%s/bg%g", workers, sizeName(sz), density), func(t *testing.T) {
					w, h := sz[0], sz[1]
					mask := make([]float32, w*h)
					for i := range mask {
						if rng.Float64() >= density {
							mask[i] = 0.5 + 0.5*rng.Float32()
						} else {
							mask[i] = 0.49 * rng.Float32()
						}
					}
					out := img(t, d, w, h, 1, nil)
					if err := d.DistanceTransform(out, img(t, d, w, h, 1, mask), 0.5); err != nil {
						t.Fatal(err)
					}
					closeAll(t, "edt", pixels(t, d, out), refEDT(mask, w, h, 0.5), 1e-5, 1e-6)
				})
			}
		}
		t.Run(fmt.Sprintf("w%d/no background", workers), func(t *testing.T) {
			m := img(t, d, 9, 4, 1, nil)
			d.Fill(m, []float32{1})
			out := img(t, d, 9, 4, 1, nil)
			if err := d.DistanceTransform(out, m, 0.5); err != nil {
				t.Fatal(err)
			}
			for _, v := range pixels(t, d, out) {
				if v != 13 {
					t.Fatalf("got %v, want W+H = 13", v)
				}
			}
		})
		t.Run(fmt.Sprintf("w%d/in place", workers), func(t *testing.T) {
			w, h := 23, 11
			mask := randAlpha(rng, w*h)
			m := img(t, d, w, h, 1, mask)
			if err := d.DistanceTransform(m, m, 0.5); err != nil {
				t.Fatal(err)
			}
			closeAll(t, "edt in place", pixels(t, d, m), refEDT(mask, w, h, 0.5), 1e-5, 1e-6)
		})
	}
}

func TestNormalsFromMatte(t *testing.T) {
	d := NewCPU(2)
	rng := newRNG(51)
	for _, sz := range testSizes {
		for _, withDetail := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/detail=%v", sizeName(sz), withDetail), func(t *testing.T) {
				w, h := sz[0], sz[1]
				n := w * h
				dist := randVals(rng, n, 0, 12)
				dist[0] = 0
				det := randVals(rng, n, 0, 1)
				var detail Image
				if withDetail {
					detail = img(t, d, w, h, 1, det)
				}
				const radius, ds = 8, 0.7
				out := img(t, d, w, h, 3, nil)
				if err := d.NormalsFromMatte(out, img(t, d, w, h, 1, dist), detail, radius, ds); err != nil {
					t.Fatal(err)
				}
				hgt := func(x, y int) float64 {
					x, y = clampi(x, 0, w-1), clampi(y, 0, h-1)
					u := 1 - math.Min(float64(dist[y*w+x])/radius, 1)
					v := radius * math.Sqrt(1-u*u)
					if withDetail {
						v += ds * float64(det[y*w+x])
					}
					return v
				}
				want := make([]float64, 3*n)
				for y := range h {
					for x := range w {
						i := y*w + x
						if dist[i] == 0 {
							want[i], want[n+i], want[2*n+i] = 0, 0, 1
							continue
						}
						gx := (hgt(x+1, y) - hgt(x-1, y)) / 2
						gy := (hgt(x, y+1) - hgt(x, y-1)) / 2
						l := math.Sqrt(gx*gx + gy*gy + 1)
						want[i], want[n+i], want[2*n+i] = -gx/l, gy/l, 1/l
					}
				}
				closeAll(t, "normals", pixels(t, d, out), want, 2e-5, 0)
			})
		}
	}
	t.Run("sphere-like slope signs", func(t *testing.T) {
		// Distance grows to the right and downward: the surface rises
		// toward +x and toward the bottom row, so it faces left (nx < 0)
		// and up (ny > 0, y up).
		w, h := 5, 5
		dist := make([]float32, w*h)
		for y := range h {
			for x := range w {
				dist[y*w+x] = float32(1 + x + y)
			}
		}
		out := img(t, d, w, h, 3, nil)
		if err := d.NormalsFromMatte(out, img(t, d, w, h, 1, dist), nil, 100, 0); err != nil {
			t.Fatal(err)
		}
		p := pixels(t, d, out)
		i := 2*w + 2
		if !(p[i] < 0) || !(p[w*h+i] > 0) || !(p[2*w*h+i] > 0) {
			t.Errorf("normal at centre = (%v,%v,%v): want x<0 (h rises to the right), y>0 (h rises downward, y up)", p[i], p[w*h+i], p[2*w*h+i])
		}
	})
}
