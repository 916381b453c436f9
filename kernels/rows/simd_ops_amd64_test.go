//go:build goexperiment.simd && amd64

package rows_test

import (
	"fmt"
	"testing"

	"github.com/vfxrender/vfx/kernels/cpuref"
	"github.com/vfxrender/vfx/kernels/rows"
)

// TestSIMDOpsMatchScalar runs whole ops (row bands, edges, both passes of
// the blur) with the vector loops on and off: bit for bit the same.
func TestSIMDOpsMatchScalar(t *testing.T) {
	if !rows.SIMDOn() {
		t.Skip("this CPU has no AVX2: the vector loops never run")
	}
	d := cpuref.NewCPU(2)
	defer d.Close()
	rng := rows.NewRNG(5)
	for _, sz := range [][2]int{{37, 23}, {480, 270}, {61, 9}, {1920, 12}} {
		w, h := sz[0], sz[1]
		src := img(t, d, w, h, 3, rows.RandVals(rng, w*h*3, 0, 1.5))
		half := img(t, d, w/2+1, h/2+1, 3, rows.RandVals(rng, (w/2+1)*(h/2+1)*3, 0, 1))
		e1 := img(t, d, w, h, 1, rows.RandVals(rng, w*h, -0.1, 2))
		e3 := img(t, d, w, h, 3, rows.RandVals(rng, w*h*3, 0, 2))
		ops := map[string]func(dst cpuref.Image) error{
			"GaussianBlur 2":   func(dst cpuref.Image) error { return d.GaussianBlur(dst, src, 2) },
			"GaussianBlur 0.8": func(dst cpuref.Image) error { return d.GaussianBlur(dst, src, 0.8) },
			"ResizeBilinear":   func(dst cpuref.Image) error { return d.ResizeBilinear(dst, half) },
			"RatioRelight":     func(dst cpuref.Image) error { return d.RatioRelight(dst, src, e3, e1, nil, 0.05, 4) },
		}
		// Shift: inside, across and beyond the borders, and offsets whose
		// positions float32 rounds onto whole columns at some widths.
		for _, off := range [][2]float32{{2.37, -1.61}, {-0.5, 0.75}, {-1e-5, 3e-5}, {-7.125, 3}, {float32(w) + 2.5, -float32(h) - 1}, {-39.9999, 0.4}} {
			ops[fmt.Sprintf("Shift %v", off)] = func(dst cpuref.Image) error { return d.Shift(dst, src, off[0], off[1]) }
		}
		for name, op := range ops {
			a, b := img(t, d, w, h, 3, nil), img(t, d, w, h, 3, nil)
			if err := op(a); err != nil {
				t.Fatal(err)
			}
			var err error
			rows.WithScalar(func() { err = op(b) })
			if err != nil {
				t.Fatal(err)
			}
			rows.SameBits(t, fmt.Sprintf("%s %dx%d", name, w, h), pixels(t, d, a), pixels(t, d, b))
		}
		dist := img(t, d, w, h, 1, rows.Edgy(uint64(w), w*h, -2, 20))
		det := img(t, d, w, h, 1, rows.RandVals(rng, w*h, -0.3, 0.3))
		for _, c := range []struct {
			detail    cpuref.Image
			radius, k float32
		}{{det, 8, 1.5}, {nil, 8, 0}, {det, 0, 1.5}, {nil, 3, 0}} {
			a, b := img(t, d, w, h, 3, nil), img(t, d, w, h, 3, nil)
			if err := d.NormalsFromMatte(a, dist, c.detail, c.radius, c.k); err != nil {
				t.Fatal(err)
			}
			rows.WithScalar(func() { _ = d.NormalsFromMatte(b, dist, c.detail, c.radius, c.k) })
			rows.SameBits(t, fmt.Sprintf("NormalsFromMatte r%g %dx%d", c.radius, w, h), pixels(t, d, a), pixels(t, d, b))
		}
		for _, f := range []int{2, 3, 4} {
			a, b := img(t, d, w/f, h/f, 3, nil), img(t, d, w/f, h/f, 3, nil)
			if err := d.ResizeArea(a, src); err != nil {
				t.Fatal(err)
			}
			rows.WithScalar(func() { _ = d.ResizeArea(b, src) })
			rows.SameBits(t, fmt.Sprintf("ResizeArea 1/%d %dx%d", f, w, h), pixels(t, d, a), pixels(t, d, b))
		}
	}
}

// img allocates an image on d and fills it with data (nil = zeros).
func img(t testing.TB, d *cpuref.CPU, w, h, c int, data []float32) cpuref.Image {
	t.Helper()
	m, err := d.NewImage(w, h, c)
	if err != nil {
		t.Fatalf("NewImage(%d,%d,%d): %v", w, h, c, err)
	}
	if data != nil {
		if err := d.WritePixels(m, data); err != nil {
			t.Fatalf("WritePixels: %v", err)
		}
	}
	return m
}

func pixels(t testing.TB, d *cpuref.CPU, m cpuref.Image) []float32 {
	t.Helper()
	p, err := d.ReadPixels(m)
	if err != nil {
		t.Fatalf("ReadPixels: %v", err)
	}
	return p
}
