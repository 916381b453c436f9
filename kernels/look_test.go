package kernels

import (
	"errors"
	"math"
	"testing"

	"github.com/vfxrender/vfx/frame"
)

// TestGainCompositeLook checks GainCompositeLook against its formula
// evaluated everywhere on bilinear upsamplings of its low-resolution
// inputs (ResizeBilinear samples exactly as the composite does), its
// download form against the chain, and that a zero look is GainComposite.
func TestGainCompositeLook(t *testing.T) {
	const wrap, maxV = 0.4, 1.2
	for _, workers := range []int{1, 3} {
		d := NewCPU(workers)
		for _, sz := range [][2]int{{37, 23}, {64, 40}, {33, 1}, {1, 1}, {301, 71}} {
			w, h := sz[0], sz[1]
			n := w * h
			rng := newRNG(uint64(n) + 5)
			src := img(t, d, w, h, 3, randVals(rng, 3*n, -0.05, 1.1))
			gain := img(t, d, 7, 4, 3, randVals(rng, 3*28, 0, 2))
			fm := img(t, d, 7, 4, 3, randVals(rng, 3*28, 0, 1))
			bm := img(t, d, 7, 4, 3, randVals(rng, 3*28, 0, 1))
			shv := randVals(rng, 28, 0, 0.7)
			for i := 0; i < 14; i++ { // two rows with no shadow
				shv[i] = 0
			}
			sh := img(t, d, 7, 4, 1, shv)
			alphaPix := blockAlpha(w, h, uint64(n))
			alpha := img(t, d, w, h, 1, alphaPix)
			bg := img(t, d, w, h, 3, randVals(rng, 3*n, 0, 1.05))
			bgBlur := img(t, d, w, h, 3, randVals(rng, 3*n, 0, 1))
			abLow := img(t, d, 5, 3, 1, randAlpha(rng, 15))
			wl := img(t, d, 6, 5, 3, randVals(rng, 90, 0, 1))
			up := func(m Image, c int) []float32 {
				u := img(t, d, w, h, c, nil)
				if err := d.ResizeBilinear(u, m); err != nil {
					t.Fatal(err)
				}
				return pixels(t, d, u)
			}
			G, F, B, S, AB, WL := up(gain, 3), up(fm, 3), up(bm, 3), up(sh, 1), up(abLow, 1), up(wl, 3)
			I, BG, BB := pixels(t, d, src), pixels(t, d, bg), pixels(t, d, bgBlur)
			for _, tc := range []struct {
				name          string
				look          CompositeLook
				est, shadow   bool
				bgBlur, abLow Image
			}{
				{"all", CompositeLook{FgLow: fm, BgOldLow: bm, ShadowLow: sh}, true, true, bgBlur, abLow},
				{"fg", CompositeLook{FgLow: fm, BgOldLow: bm}, true, false, bgBlur, abLow},
				{"shadow-nowrap", CompositeLook{ShadowLow: sh}, false, true, nil, nil},
				// The masked wrap's light: bgBlur and alphaBlurLow not read.
				{"wraplow", CompositeLook{FgLow: fm, BgOldLow: bm, ShadowLow: sh, WrapLow: wl}, true, true, nil, nil},
				{"wraplow-over", CompositeLook{WrapLow: wl}, false, false, bgBlur, abLow},
				// The soft band's fade, with every input and alone (at
				// the edge of its range, 1, too).
				{"fade", CompositeLook{FgLow: fm, BgOldLow: bm, ShadowLow: sh, WrapLow: wl, EdgeFade: 0.5}, true, true, nil, nil},
				{"fade-only", CompositeLook{EdgeFade: 0.3}, false, false, bgBlur, abLow},
				{"fade-1", CompositeLook{FgLow: fm, BgOldLow: bm, EdgeFade: 1}, true, false, bgBlur, abLow},
			} {
				got := img(t, d, w, h, 3, nil)
				if err := d.GainCompositeLook(got, src, alpha, gain, bg, tc.bgBlur, tc.abLow, tc.look, wrap, maxV); err != nil {
					t.Fatal(err)
				}
				gp := pixels(t, d, got)
				for i := 0; i < n; i++ {
					a := alphaPix[i]
					var wf float32
					bbv := BB
					switch {
					case tc.look.WrapLow != nil:
						wf, bbv = wrap*a*a, WL
					case tc.bgBlur != nil:
						wf = wrap * a * (1 - AB[i])
					}
					for c := 0; c < 3; c++ {
						k := c*n + i
						bv := BG[k]
						if tc.shadow {
							bv *= 1 - S[i]
						}
						var want float32
						if a == 0 {
							want = bv
						} else {
							iv := I[k]
							if tc.est && a != 1 {
								den := a*a + (1-a)*(1-a)
								iv = min(max(F[k]+a*(iv-a*F[k]-(1-a)*B[k])/den, 0), maxV)
							}
							f := min(max(iv*G[k], 0), maxV)
							if e := tc.look.EdgeFade; e != 0 && a != 1 {
								tt := min(a*(1/e), 1)
								f -= float32((1 - tt) * max(f-I[k], 0))
							}
							if a == 1 {
								want = (f + 0) + wf*bbv[k]
							} else {
								want = a*f + (1-a)*bv + wf*bbv[k]
							}
						}
						if gp[k] != want {
							t.Fatalf("%s %dx%d workers %d: pixel %d channel %d: got %v, want %v (a %v)", tc.name, w, h, workers, i, c, gp[k], want, a)
						}
					}
				}
				// The download form is the chain.
				for _, fm := range []frame.PixelFormat{frame.YUV420P, frame.RGB24} {
					f1, _ := frame.New(fm, w, h)
					f2, _ := frame.New(fm, w, h)
					f1.ColorSpace, f2.ColorSpace = frame.BT709, frame.BT709
					if err := d.GainCompositeLookDownload(f1, src, alpha, gain, bg, tc.bgBlur, tc.abLow, tc.look, wrap, maxV); err != nil {
						t.Fatal(err)
					}
					if err := d.Download(f2, got); err != nil {
						t.Fatal(err)
					}
					for p := range f1.Planes {
						for i := range f1.Planes[p] {
							if f1.Planes[p][i] != f2.Planes[p][i] {
								t.Fatalf("%s %v %dx%d: download differs from the chain at plane %d byte %d", tc.name, fm, w, h, p, i)
							}
						}
					}
				}
			}
			// A zero look is GainComposite.
			a1, a2 := img(t, d, w, h, 3, nil), img(t, d, w, h, 3, nil)
			if err := d.GainComposite(a1, src, alpha, gain, bg, bgBlur, abLow, wrap, maxV); err != nil {
				t.Fatal(err)
			}
			if err := d.GainCompositeLook(a2, src, alpha, gain, bg, bgBlur, abLow, CompositeLook{}, wrap, maxV); err != nil {
				t.Fatal(err)
			}
			p1, p2 := pixels(t, d, a1), pixels(t, d, a2)
			for i := range p1 {
				if p1[i] != p2[i] {
					t.Fatalf("zero look differs at %d", i)
				}
			}
		}
	}
}

func TestGainCompositeLookErrors(t *testing.T) {
	d := NewCPU(1)
	src, alpha, bg, dst := img(t, d, 8, 8, 3, nil), img(t, d, 8, 8, 1, nil), img(t, d, 8, 8, 3, nil), img(t, d, 8, 8, 3, nil)
	gain, g3, g1, other := img(t, d, 4, 4, 3, nil), img(t, d, 4, 4, 3, nil), img(t, d, 4, 4, 1, nil), img(t, d, 5, 4, 3, nil)
	for name, look := range map[string]CompositeLook{
		"fg without bg":   {FgLow: g3},
		"wrong size":      {FgLow: other, BgOldLow: other},
		"shadow channels": {ShadowLow: g3},
		"fg channels":     {FgLow: g1, BgOldLow: g1},
		"fade below 0":    {EdgeFade: -0.01},
		"fade above 1":    {EdgeFade: 1.01},
		"fade NaN":        {EdgeFade: float32(math.NaN())},
	} {
		if err := d.GainCompositeLook(dst, src, alpha, gain, bg, nil, nil, look, 0, 1); !errors.Is(err, ErrShape) {
			t.Errorf("%s: got %v, want ErrShape", name, err)
		}
	}
}
