package kernels

import (
	"math"
	"testing"
)

// refOverlap is the length of [a, a+1) ∩ [lo, hi).
func refOverlap(a int, lo, hi float64) float64 {
	return math.Max(0, math.Min(float64(a+1), hi)-math.Max(float64(a), lo))
}

func TestResizeArea(t *testing.T) {
	d := NewCPU(2)
	rng := newRNG(20)
	pairs := [][4]int{{7, 5, 7, 5}, {7, 5, 3, 2}, {13, 1, 4, 1}, {20, 11, 1, 1}, {33, 20, 7, 9}, {16, 8, 4, 2}, {9, 9, 8, 8}}
	for _, p := range pairs {
		sw, sh, dw, dh := p[0], p[1], p[2], p[3]
		t.Run(sizeName([2]int{sw, sh})+"to"+sizeName([2]int{dw, dh}), func(t *testing.T) {
			src := randVals(rng, 3*sw*sh, 0, 1)
			out := img(t, d, dw, dh, 3, nil)
			if err := d.ResizeArea(out, img(t, d, sw, sh, 3, src)); err != nil {
				t.Fatal(err)
			}
			want := make([]float64, 3*dw*dh)
			sx, sy := float64(sw)/float64(dw), float64(sh)/float64(dh)
			for c := range 3 {
				for y := range dh {
					for x := range dw {
						s := 0.0
						for j := range sh {
							oy := refOverlap(j, float64(y)*sy, float64(y+1)*sy)
							for i := range sw {
								s += oy * refOverlap(i, float64(x)*sx, float64(x+1)*sx) * at(src, sw, sh, i, j, c)
							}
						}
						want[c*dw*dh+y*dw+x] = s / (sx * sy)
					}
				}
			}
			closeAll(t, "area", pixels(t, d, out), want, 1e-6, 1e-5)
		})
	}
	t.Run("upscale is an error", func(t *testing.T) {
		err := d.ResizeArea(img(t, d, 8, 4, 1, nil), img(t, d, 4, 4, 1, nil))
		if err == nil {
			t.Fatal("no error")
		}
	})
}

// refLanczos3 is sinc(x)sinc(x/3) on |x| < 3.
func refLanczos3(x float64) float64 {
	if math.Abs(x) < 1e-12 {
		return 1
	}
	if math.Abs(x) >= 3 {
		return 0
	}
	return math.Sin(math.Pi*x) / (math.Pi * x) * math.Sin(math.Pi*x/3) / (math.Pi * x / 3)
}

// refLanczosWeights returns (index, weight) pairs for output i of an
// axis mapped by c = (i+0.5+off)*inv - 0.5, normalised, indices clamped.
func refLanczosWeights(i, in int, inv, off float64) ([]int, []float64) {
	c := (float64(i)+0.5+off)*inv - 0.5
	fs := math.Max(inv, 1)
	var idx []int
	var ws []float64
	sum := 0.0
	for j := int(math.Floor(c - 3*fs)); j <= int(math.Ceil(c+3*fs)); j++ {
		wt := refLanczos3((float64(j) - c) / fs)
		idx = append(idx, clampi(j, 0, in-1))
		ws = append(ws, wt)
		sum += wt
	}
	for k := range ws {
		ws[k] /= sum
	}
	return idx, ws
}

// refResample2D applies per-axis Lanczos weights as a full 2D sum.
func refResample2D(src []float32, sw, sh, ch, dw, dh int, invX, offX, invY, offY float64) []float64 {
	out := make([]float64, ch*dw*dh)
	for c := range ch {
		for y := range dh {
			jy, wy := refLanczosWeights(y, sh, invY, offY)
			for x := range dw {
				jx, wx := refLanczosWeights(x, sw, invX, offX)
				s := 0.0
				for a := range jy {
					for b := range jx {
						s += wy[a] * wx[b] * at(src, sw, sh, jx[b], jy[a], c)
					}
				}
				out[c*dw*dh+y*dw+x] = s
			}
		}
	}
	return out
}

func TestResizeLanczos3(t *testing.T) {
	d := NewCPU(2)
	rng := newRNG(21)
	pairs := [][4]int{{7, 5, 14, 10}, {7, 5, 3, 2}, {13, 1, 5, 2}, {1, 1, 3, 3}, {33, 20, 8, 27}, {16, 9, 7, 9}, {40, 30, 9, 4}}
	for _, p := range pairs {
		sw, sh, dw, dh := p[0], p[1], p[2], p[3]
		t.Run(sizeName([2]int{sw, sh})+"to"+sizeName([2]int{dw, dh}), func(t *testing.T) {
			src := randVals(rng, 3*sw*sh, 0, 1)
			out := img(t, d, dw, dh, 3, nil)
			if err := d.ResizeLanczos3(out, img(t, d, sw, sh, 3, src)); err != nil {
				t.Fatal(err)
			}
			want := refResample2D(src, sw, sh, 3, dw, dh, float64(sw)/float64(dw), 0, float64(sh)/float64(dh), 0)
			closeAll(t, "lanczos", pixels(t, d, out), want, 2e-6, 1e-5)
		})
	}
	t.Run("constant stays constant", func(t *testing.T) {
		for _, p := range pairs {
			sw, sh, dw, dh := p[0], p[1], p[2], p[3]
			src := img(t, d, sw, sh, 1, nil)
			d.Fill(src, []float32{0.375})
			out := img(t, d, dw, dh, 1, nil)
			if err := d.ResizeLanczos3(out, src); err != nil {
				t.Fatal(err)
			}
			for i, v := range pixels(t, d, out) {
				if math.Abs(float64(v)-0.375) > 1e-6 {
					t.Fatalf("%v: pixel %d = %v, want 0.375", p, i, v)
				}
			}
		}
	})
	t.Run("same size is identity", func(t *testing.T) {
		src := randVals(rng, 3*11*7, 0, 1)
		out := img(t, d, 11, 7, 3, nil)
		if err := d.ResizeLanczos3(out, img(t, d, 11, 7, 3, src)); err != nil {
			t.Fatal(err)
		}
		for i, v := range pixels(t, d, out) {
			if v != src[i] {
				t.Fatalf("pixel %d: %v, want %v", i, v, src[i])
			}
		}
	})
}

func TestCoverFit(t *testing.T) {
	d := NewCPU(2)
	rng := newRNG(22)
	t.Run("wide into square crops the sides", func(t *testing.T) {
		sw, sh := 40, 10
		src := randVals(rng, sw*sh, 0, 1)
		out := img(t, d, 10, 10, 1, nil)
		if err := d.CoverFit(out, img(t, d, sw, sh, 1, src)); err != nil {
			t.Fatal(err)
		}
		got := pixels(t, d, out)
		for y := range 10 {
			for x := range 10 {
				if want := src[y*sw+x+15]; got[y*10+x] != want {
					t.Fatalf("(%d,%d) = %v, want src(%d,%d) = %v", x, y, got[y*10+x], x+15, y, want)
				}
			}
		}
	})
	cases := [][4]int{{41, 11, 8, 8}, {11, 41, 8, 8}, {30, 20, 12, 5}, {7, 5, 16, 16}, {13, 1, 3, 3}}
	for _, p := range cases {
		sw, sh, dw, dh := p[0], p[1], p[2], p[3]
		t.Run(sizeName([2]int{sw, sh})+"to"+sizeName([2]int{dw, dh}), func(t *testing.T) {
			src := randVals(rng, 3*sw*sh, 0, 1)
			out := img(t, d, dw, dh, 3, nil)
			if err := d.CoverFit(out, img(t, d, sw, sh, 3, src)); err != nil {
				t.Fatal(err)
			}
			s := math.Max(float64(dw)/float64(sw), float64(dh)/float64(sh))
			offX := (float64(sw)*s - float64(dw)) / 2
			offY := (float64(sh)*s - float64(dh)) / 2
			want := refResample2D(src, sw, sh, 3, dw, dh, 1/s, offX, 1/s, offY)
			closeAll(t, "coverfit", pixels(t, d, out), want, 1e-5, 1e-5)
		})
		t.Run(sizeName([2]int{sw, sh})+"to"+sizeName([2]int{dw, dh})+"/symmetric", func(t *testing.T) {
			// A pattern symmetric about the source centre stays symmetric
			// about the destination centre: the centre is kept.
			src := make([]float32, sw*sh)
			for y := range sh {
				for x := range sw {
					dx, dy := float64(x)+0.5-float64(sw)/2, float64(y)+0.5-float64(sh)/2
					src[y*sw+x] = float32(math.Exp(-(dx*dx + dy*dy) / 20))
				}
			}
			out := img(t, d, dw, dh, 1, nil)
			if err := d.CoverFit(out, img(t, d, sw, sh, 1, src)); err != nil {
				t.Fatal(err)
			}
			got := pixels(t, d, out)
			for y := range dh {
				for x := range dw {
					a, b := got[y*dw+x], got[(dh-1-y)*dw+dw-1-x]
					if math.Abs(float64(a-b)) > 1e-5 {
						t.Fatalf("(%d,%d) = %v but mirror = %v", x, y, a, b)
					}
				}
			}
		})
	}
}
