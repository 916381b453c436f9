package kernels

import (
	"math"
	"testing"
)

func TestFillCopyLuma(t *testing.T) {
	d := NewCPU(2)
	rng := newRNG(10)
	for _, sz := range testSizes {
		w, h := sz[0], sz[1]
		n := w * h
		t.Run("fill/"+sizeName(sz), func(t *testing.T) {
			m := img(t, d, w, h, 3, randVals(rng, 3*n, 0, 1))
			if err := d.Fill(m, []float32{0.25, -1, 7}); err != nil {
				t.Fatal(err)
			}
			want := make([]float64, 3*n)
			for i := range n {
				want[i], want[n+i], want[2*n+i] = 0.25, -1, 7
			}
			closeAll(t, "fill", pixels(t, d, m), want, 0, 0)
		})
		t.Run("copy/"+sizeName(sz), func(t *testing.T) {
			src := randVals(rng, 3*n, -2, 2)
			a, b := img(t, d, w, h, 3, src), img(t, d, w, h, 3, nil)
			if err := d.Copy(b, a); err != nil {
				t.Fatal(err)
			}
			want := make([]float64, 3*n)
			for i, v := range src {
				want[i] = float64(v)
			}
			closeAll(t, "copy", pixels(t, d, b), want, 0, 0)
		})
		t.Run("luma/"+sizeName(sz), func(t *testing.T) {
			src := randVals(rng, 3*n, 0, 1)
			a, b := img(t, d, w, h, 3, src), img(t, d, w, h, 1, nil)
			if err := d.Luma(b, a); err != nil {
				t.Fatal(err)
			}
			want := make([]float64, n)
			for i := range n {
				want[i] = 0.2126*float64(src[i]) + 0.7152*float64(src[n+i]) + 0.0722*float64(src[2*n+i])
			}
			closeAll(t, "luma", pixels(t, d, b), want, 1e-6, 0)
		})
	}
	t.Run("luma of red", func(t *testing.T) {
		a, b := img(t, d, 1, 1, 3, []float32{1, 0, 0}), img(t, d, 1, 1, 1, nil)
		if err := d.Luma(b, a); err != nil {
			t.Fatal(err)
		}
		if got := pixels(t, d, b)[0]; got != 0.2126 {
			t.Errorf("Luma(red) = %v, want 0.2126", got)
		}
	})
}

func TestCompositeLightWrap(t *testing.T) {
	d := NewCPU(2)
	rng := newRNG(11)
	for _, sz := range testSizes {
		w, h := sz[0], sz[1]
		n := w * h
		fg, bg := randVals(rng, 3*n, 0, 2), randVals(rng, 3*n, 0, 2)
		al := randAlpha(rng, n)
		F, B, A := img(t, d, w, h, 3, fg), img(t, d, w, h, 3, bg), img(t, d, w, h, 1, al)
		t.Run("composite/"+sizeName(sz), func(t *testing.T) {
			out := img(t, d, w, h, 3, nil)
			if err := d.Composite(out, F, B, A); err != nil {
				t.Fatal(err)
			}
			got := pixels(t, d, out)
			want := make([]float64, 3*n)
			for c := range 3 {
				for i := range n {
					a := float64(al[i])
					want[c*n+i] = a*float64(fg[c*n+i]) + (1-a)*float64(bg[c*n+i])
					// alpha exactly 0 or 1 selects exactly.
					if (al[i] == 1 && got[c*n+i] != fg[c*n+i]) || (al[i] == 0 && got[c*n+i] != bg[c*n+i]) {
						t.Errorf("alpha %v at %d: %v not exact", al[i], i, got[c*n+i])
					}
				}
			}
			closeAll(t, "composite", got, want, 1e-6, 1e-6)
			if err := d.Composite(out, F, nil, nil); err != nil {
				t.Fatal(err)
			}
			for i, v := range pixels(t, d, out) {
				if v != fg[i] {
					t.Fatalf("nil alpha: %v, want fg %v", v, fg[i])
				}
			}
		})
		t.Run("lightwrap/"+sizeName(sz), func(t *testing.T) {
			ab := randAlpha(rng, n)
			AB := img(t, d, w, h, 1, ab)
			out := img(t, d, w, h, 3, nil)
			const s = 0.7
			if err := d.LightWrap(out, F, B, A, AB, s); err != nil {
				t.Fatal(err)
			}
			want := make([]float64, 3*n)
			for c := range 3 {
				for i := range n {
					want[c*n+i] = float64(fg[c*n+i]) + s*float64(al[i])*(1-float64(ab[i]))*float64(bg[c*n+i])
				}
			}
			closeAll(t, "lightwrap", pixels(t, d, out), want, 1e-6, 1e-6)
		})
	}
}

func TestRatioRelight(t *testing.T) {
	d := NewCPU(2)
	rng := newRNG(12)
	const eps, maxGain = 0.05, 3
	for _, sz := range testSizes {
		w, h := sz[0], sz[1]
		n := w * h
		for _, chans := range [][2]int{{3, 3}, {3, 1}, {1, 1}} {
			for _, withAlpha := range []bool{true, false} {
				name := sizeName(sz)
				if !withAlpha {
					name += "/nilalpha"
				}
				t.Run(name, func(t *testing.T) {
					src := randVals(rng, 3*n, 0, 1)
					en := randVals(rng, chans[0]*n, -0.1, 2)
					eo := randVals(rng, chans[1]*n, -0.1, 1)
					eo[0] = 0 // below eps
					al := randAlpha(rng, n)
					var A Image
					if withAlpha {
						A = img(t, d, w, h, 1, al)
					}
					out := img(t, d, w, h, 3, nil)
					err := d.RatioRelight(out, img(t, d, w, h, 3, src), img(t, d, w, h, chans[0], en), img(t, d, w, h, chans[1], eo), A, eps, maxGain)
					if err != nil {
						t.Fatal(err)
					}
					want := make([]float64, 3*n)
					for c := range 3 {
						for i := range n {
							e1 := float64(en[min(c, chans[0]-1)*n+i])
							e0 := float64(eo[min(c, chans[1]-1)*n+i])
							g := math.Max(0, math.Min(maxGain, e1/math.Max(e0, eps)))
							a := 1.0
							if withAlpha {
								a = float64(al[i])
							}
							want[c*n+i] = float64(src[c*n+i]) * (1 + a*(g-1))
						}
					}
					closeAll(t, "relit", pixels(t, d, out), want, 1e-5, 1e-5)
				})
			}
		}
	}
}

// refBilinear samples a planar image at output (x, y) of an ow x oh
// resize, pixel centres aligned, edges clamped.
func refBilinear(p []float32, w, h, c, ow, oh, x, y int) float64 {
	sx := math.Max((float64(x)+0.5)*float64(w)/float64(ow)-0.5, 0)
	sy := math.Max((float64(y)+0.5)*float64(h)/float64(oh)-0.5, 0)
	x0, y0 := int(sx), int(sy)
	fx, fy := sx-float64(x0), sy-float64(y0)
	x1, y1 := min(x0+1, w-1), min(y0+1, h-1)
	x0, y0 = min(x0, w-1), min(y0, h-1)
	top := (1-fx)*at(p, w, h, x0, y0, c) + fx*at(p, w, h, x1, y0, c)
	bot := (1-fx)*at(p, w, h, x0, y1, c) + fx*at(p, w, h, x1, y1, c)
	return (1-fy)*top + fy*bot
}

func TestResizeBilinear(t *testing.T) {
	d := NewCPU(2)
	rng := newRNG(13)
	pairs := [][4]int{{7, 5, 7, 5}, {7, 5, 20, 11}, {20, 11, 7, 5}, {1, 1, 5, 3}, {13, 1, 4, 3}, {4, 4, 1, 1}, {16, 9, 64, 36}}
	for _, p := range pairs {
		sw, sh, dw, dh := p[0], p[1], p[2], p[3]
		t.Run(sizeName([2]int{sw, sh})+"to"+sizeName([2]int{dw, dh}), func(t *testing.T) {
			src := randVals(rng, 2*sw*sh, 0, 1)
			out := img(t, d, dw, dh, 2, nil)
			if err := d.ResizeBilinear(out, img(t, d, sw, sh, 2, src)); err != nil {
				t.Fatal(err)
			}
			want := make([]float64, 2*dw*dh)
			for c := range 2 {
				for y := range dh {
					for x := range dw {
						want[c*dw*dh+y*dw+x] = refBilinear(src, sw, sh, c, dw, dh, x, y)
					}
				}
			}
			closeAll(t, "bilinear", pixels(t, d, out), want, 1e-6, 1e-6)
		})
	}
}

func TestGainCompositeMatchesChain(t *testing.T) {
	rng := newRNG(14)
	cases := []struct {
		w, h, lw, lh, aw, ah int
		alpha, wrap          bool
	}{
		{33, 20, 9, 5, 9, 5, true, true},
		{33, 20, 9, 5, 4, 3, true, true},
		{7, 5, 7, 5, 2, 2, true, true},
		{13, 1, 3, 1, 1, 1, true, false},
		{16, 9, 4, 3, 4, 3, false, true},
		{16, 9, 4, 3, 4, 3, false, false},
		{1, 1, 1, 1, 1, 1, true, true},
	}
	for _, workers := range []int{1, 3} {
		d := NewCPU(workers)
		for _, c := range cases {
			t.Run(sizeName([2]int{c.w, c.h})+"/gain"+sizeName([2]int{c.lw, c.lh}), func(t *testing.T) {
				n := c.w * c.h
				const wrap, maxV = 0.6, 1.5
				src := img(t, d, c.w, c.h, 3, randVals(rng, 3*n, 0, 1))
				gain := img(t, d, c.lw, c.lh, 3, randVals(rng, 3*c.lw*c.lh, -0.2, 2.5))
				var alpha, bg, bgBlur, abLow Image
				ones := img(t, d, c.w, c.h, 1, nil)
				d.Fill(ones, []float32{1})
				if c.alpha {
					alpha = img(t, d, c.w, c.h, 1, randAlpha(rng, n))
					bg = img(t, d, c.w, c.h, 3, randVals(rng, 3*n, 0, 1))
				}
				if c.wrap {
					bgBlur = img(t, d, c.w, c.h, 3, randVals(rng, 3*n, 0, 1))
					abLow = img(t, d, c.aw, c.ah, 1, randAlpha(rng, c.aw*c.ah))
				}
				out := img(t, d, c.w, c.h, 3, nil)
				if err := d.GainComposite(out, src, alpha, gain, bg, bgBlur, abLow, wrap, maxV); err != nil {
					t.Fatal(err)
				}
				// The chain with the separate ops.
				g := img(t, d, c.w, c.h, 3, nil)
				if err := d.ResizeBilinear(g, gain); err != nil {
					t.Fatal(err)
				}
				sp, gp := pixels(t, d, src), pixels(t, d, g)
				fp := make([]float32, 3*n)
				for i := range fp {
					fp[i] = min(max(sp[i]*gp[i], 0), maxV)
				}
				f := img(t, d, c.w, c.h, 3, fp)
				comp := img(t, d, c.w, c.h, 3, nil)
				if err := d.Composite(comp, f, bg, alpha); err != nil {
					t.Fatal(err)
				}
				want := comp
				if c.wrap {
					ab := img(t, d, c.w, c.h, 1, nil)
					if err := d.ResizeBilinear(ab, abLow); err != nil {
						t.Fatal(err)
					}
					a := alpha
					if a == nil {
						a = ones
					}
					want = img(t, d, c.w, c.h, 3, nil)
					if err := d.LightWrap(want, comp, bgBlur, a, ab, wrap); err != nil {
						t.Fatal(err)
					}
				}
				got, exp := pixels(t, d, out), pixels(t, d, want)
				w64 := make([]float64, len(exp))
				for i, v := range exp {
					w64[i] = float64(v)
				}
				closeAll(t, "gaincomposite", got, w64, 1e-6, 1e-6)
			})
		}
	}
}
