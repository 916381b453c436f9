package kernels

import (
	"math"
	"testing"
)

// placeRef is an independent reference of Place for one pixel of a
// 1-channel w x h image: the area filter as the exact integral of the
// piecewise-constant source over the output pixel's box (scale < 1), or
// bilinear between the four nearest centres (scale >= 1), outside the
// source 0 (zero) or the nearest edge pixel.
func placeRef(src []float32, w, h int, p Placement, zero bool, u, v int) float64 {
	at := func(x, y int) float64 {
		if x < 0 || y < 0 || x >= w || y >= h {
			if zero {
				return 0
			}
			x, y = min(max(x, 0), w-1), min(max(y, 0), h-1)
		}
		return float64(src[y*w+x])
	}
	sx := float64(w)*(0.5+p.X) - p.Scale*float64(w)/2
	sy := float64(h)*(0.5+p.Y) - p.Scale*float64(h)/2
	if p.Scale >= 1 {
		cx := (float64(u)+0.5-sx)/p.Scale - 0.5
		cy := (float64(v)+0.5-sy)/p.Scale - 0.5
		x0, y0 := math.Floor(cx), math.Floor(cy)
		fx, fy := cx-x0, cy-y0
		i, j := int(x0), int(y0)
		return (1-fy)*((1-fx)*at(i, j)+fx*at(i+1, j)) + fy*((1-fx)*at(i, j+1)+fx*at(i+1, j+1))
	}
	x0, x1 := (float64(u)-sx)/p.Scale, (float64(u+1)-sx)/p.Scale
	y0, y1 := (float64(v)-sy)/p.Scale, (float64(v+1)-sy)/p.Scale
	sum := 0.0
	for j := int(math.Floor(y0)); j < int(math.Ceil(y1)); j++ {
		oy := math.Min(y1, float64(j+1)) - math.Max(y0, float64(j))
		for i := int(math.Floor(x0)); i < int(math.Ceil(x1)); i++ {
			ox := math.Min(x1, float64(i+1)) - math.Max(x0, float64(i))
			sum += ox * oy * at(i, j)
		}
	}
	return sum * p.Scale * p.Scale
}

// TestPlace: the identity is an exact copy; whole-pixel moves are exact
// shifts with the uncovered band 0 (matte) or the edge pixel (colour);
// shrinking and enlarging match the independent reference within float32
// rounding for both borders and every channel; a shrunk matte keeps its
// mass times scale²; bad placements and shapes are refused.
func TestPlace(t *testing.T) {
	d := NewCPU(2)
	defer d.Close()
	const w, h = 24, 16
	data := make([]float32, w*h*3)
	for i := range data {
		data[i] = float32((i*7919)%101) / 100
	}
	src := img(t, d, w, h, 3, data)
	dst := img(t, d, w, h, 3, nil)
	if err := d.Place(dst, src, Placement{Scale: 1}, true); err != nil {
		t.Fatal(err)
	}
	if got := pixels(t, d, dst); !equal32(got, data) {
		t.Fatal("identity: not an exact copy")
	}
	// x = 0.25 of 24 = 6 px right, y = -0.125 of 16 = 2 px up.
	for _, zero := range []bool{true, false} {
		if err := d.Place(dst, src, Placement{Scale: 1, X: 0.25, Y: -0.125}, zero); err != nil {
			t.Fatal(err)
		}
		got := pixels(t, d, dst)
		for c := range 3 {
			for v := range h {
				for u := range w {
					su, sv := u-6, v+2
					var want float32
					switch {
					case su >= 0 && sv < h:
						want = data[c*w*h+sv*w+su]
					case !zero:
						want = data[c*w*h+min(sv, h-1)*w+max(su, 0)]
					}
					if g := got[c*w*h+v*w+u]; g != want {
						t.Fatalf("shift zero=%v: (%d,%d,%d) = %v, want %v", zero, u, v, c, g, want)
					}
				}
			}
		}
	}
	for _, p := range []Placement{{0.25, 0, 0}, {0.5, 0.1, -0.2}, {0.7, -0.33, 0.4}, {1, 0.013, 0.021},
		{1.5, 0.2, 0.1}, {2, -0.1, 0.3}, {4, 0.5, -0.5}, {3.3, -1, 1}} {
		for _, zero := range []bool{true, false} {
			if err := d.Place(dst, src, p, zero); err != nil {
				t.Fatal(err)
			}
			got := pixels(t, d, dst)
			for c := range 3 {
				plane := data[c*w*h : (c+1)*w*h]
				for v := range h {
					for u := range w {
						want := placeRef(plane, w, h, p, zero, u, v)
						if g := float64(got[c*w*h+v*w+u]); math.Abs(g-want) > 2e-6 {
							t.Fatalf("%+v zero=%v: (%d,%d,%d) = %v, want %v", p, zero, u, v, c, g, want)
						}
					}
				}
			}
		}
	}
	// A centred matte shrunk by 0.5 keeps its mass times 0.25, and the
	// uncovered border is exactly 0.
	a := make([]float32, w*h)
	mass := 0.0
	for i := range a {
		a[i] = data[i]
		mass += float64(a[i])
	}
	ai, ad := img(t, d, w, h, 1, a), img(t, d, w, h, 1, nil)
	if err := d.Place(ad, ai, Placement{Scale: 0.5}, true); err != nil {
		t.Fatal(err)
	}
	got, sum := pixels(t, d, ad), 0.0
	for i, g := range got {
		sum += float64(g)
		if u, v := i%w, i/w; (u < w/4 || u >= 3*w/4 || v < h/4 || v >= 3*h/4) && g != 0 {
			t.Fatalf("shrunk matte: (%d,%d) = %v outside the placed box", u, v, g)
		}
	}
	if math.Abs(sum-mass*0.25) > 1e-4 {
		t.Errorf("shrunk matte mass %v, want %v", sum, mass*0.25)
	}
	nan, inf := math.NaN(), math.Inf(1)
	for name, err := range map[string]error{
		"scale 0":   d.Place(dst, src, Placement{}, true),
		"scale < 0": d.Place(dst, src, Placement{Scale: -1}, true),
		"scale inf": d.Place(dst, src, Placement{Scale: inf}, true),
		"scale NaN": d.Place(dst, src, Placement{Scale: nan}, true),
		"x NaN":     d.Place(dst, src, Placement{Scale: 1, X: nan}, true),
		"y inf":     d.Place(dst, src, Placement{Scale: 1, Y: -inf}, true),
		"in place":  d.Place(src, src, Placement{Scale: 1}, true),
		"channels":  d.Place(ad, src, Placement{Scale: 1}, true),
		"size":      d.Place(img(t, d, w, h+1, 3, nil), src, Placement{Scale: 1}, true),
		"nil":       d.Place(nil, src, Placement{Scale: 1}, true),
	} {
		if err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}
