package kernels

import (
	"bytes"
	"errors"
	"testing"

	"github.com/vfxrender/vfx/frame"
)

// blockAlpha is a matte of long runs: rows of 0, of 1 and of fractional
// values, blocks of each within rows, and a few random pixels.
func blockAlpha(w, h int, seed uint64) []float32 {
	rng := newRNG(seed)
	v := make([]float32, w*h)
	for y := range h {
		for x := range w {
			var a float32
			switch {
			case y%5 == 0:
				a = 0
			case y%5 == 1:
				a = 1
			case (x/4+y)%3 == 0:
				a = 0
			case (x/4+y)%3 == 1:
				a = 1
			default:
				a = rng.Float32()
			}
			if rng.IntN(16) == 0 {
				a = rng.Float32()
			}
			v[y*w+x] = a
		}
	}
	return v
}

// TestGainCompositeRuns checks the run-skipping GainComposite against the
// formula evaluated everywhere, on mattes with long runs of 0 and 1.
func TestGainCompositeRuns(t *testing.T) {
	const wrap, maxV = 0.6, 1.5
	for _, workers := range []int{1, 3} {
		d := NewCPU(workers)
		for _, sz := range [][2]int{{37, 23}, {300, 70}, {1, 1}, {8, 1}} {
			for _, doWrap := range []bool{true, false} {
				w, h := sz[0], sz[1]
				n := w * h
				rng := newRNG(uint64(w*h) + 3)
				src := img(t, d, w, h, 3, randVals(rng, 3*n, 0, 1))
				gain := img(t, d, 9, 5, 3, randVals(rng, 3*45, -0.2, 2.5))
				av := blockAlpha(w, h, 9)
				alpha := img(t, d, w, h, 1, av)
				bgv := randVals(rng, 3*n, 0, 1)
				bg := img(t, d, w, h, 3, bgv)
				var bgBlur, abLow Image
				var bbv []float32
				if doWrap {
					bbv = randVals(rng, 3*n, 0, 1)
					bgBlur = img(t, d, w, h, 3, bbv)
					abLow = img(t, d, 4, 3, 1, randAlpha(rng, 12))
				}
				out := img(t, d, w, h, 3, nil)
				if err := d.GainComposite(out, src, alpha, gain, bg, bgBlur, abLow, wrap, maxV); err != nil {
					t.Fatal(err)
				}
				g := img(t, d, w, h, 3, nil)
				if err := d.ResizeBilinear(g, gain); err != nil {
					t.Fatal(err)
				}
				var abv []float32
				if doWrap {
					ab := img(t, d, w, h, 1, nil)
					if err := d.ResizeBilinear(ab, abLow); err != nil {
						t.Fatal(err)
					}
					abv = pixels(t, d, ab)
				}
				sp, gp, got := pixels(t, d, src), pixels(t, d, g), pixels(t, d, out)
				want := make([]float64, 3*n)
				for c := range 3 {
					for i := range n {
						a := av[i]
						f := min(max(sp[c*n+i]*gp[c*n+i], 0), maxV)
						q := a*f + (1-a)*bgv[c*n+i]
						if doWrap {
							q += wrap * a * (1 - abv[i]) * bbv[c*n+i]
						}
						want[c*n+i] = float64(q)
						if a == 0 && got[c*n+i] != bgv[c*n+i] {
							t.Fatalf("%dx%d c%d px %d: a = 0 gives %v, bg %v", w, h, c, i, got[c*n+i], bgv[c*n+i])
						}
					}
				}
				closeAll(t, "gaincomposite runs", got, want, 1e-6, 1e-6)
			}
		}
	}
}

// TestGainCompositeDownloadMatchesChain checks that the fused op writes
// exactly the bytes of GainComposite followed by Download.
func TestGainCompositeDownloadMatchesChain(t *testing.T) {
	const wrap, maxV = 0.4, 1.2
	type yc struct {
		cs   frame.ColorSpace
		full bool
	}
	for _, workers := range []int{1, 3} {
		d := NewCPU(workers)
		for _, sz := range [][2]int{{37, 23}, {64, 40}, {33, 1}, {1, 1}, {2, 3}, {301, 71}} {
			w, h := sz[0], sz[1]
			n := w * h
			rng := newRNG(uint64(n) + 11)
			src := img(t, d, w, h, 3, randVals(rng, 3*n, -0.05, 1.1))
			gain := img(t, d, 7, 4, 3, randVals(rng, 3*28, 0, 2))
			alpha := img(t, d, w, h, 1, blockAlpha(w, h, uint64(n)))
			bg := img(t, d, w, h, 3, randVals(rng, 3*n, -0.05, 1.05))
			bgBlur := img(t, d, w, h, 3, randVals(rng, 3*n, 0, 1))
			abLow := img(t, d, 5, 3, 1, randAlpha(rng, 15))
			args := []struct {
				name                     string
				alpha, bg, bgBlur, abLow Image
			}{
				{"matte+wrap", alpha, bg, bgBlur, abLow},
				{"matte", alpha, bg, nil, nil},
				{"fill", nil, nil, nil, nil},
				{"fill+wrap", nil, nil, bgBlur, abLow},
			}
			for _, a := range args {
				tmp := img(t, d, w, h, 3, nil)
				if err := d.GainComposite(tmp, src, a.alpha, gain, a.bg, a.bgBlur, a.abLow, wrap, maxV); err != nil {
					t.Fatal(err)
				}
				for _, f := range []frame.PixelFormat{frame.YUV420P, frame.RGB24} {
					for _, c := range []yc{{frame.BT709, false}, {frame.BT709, true}, {frame.BT601, false}, {frame.BT601, true}} {
						if f == frame.RGB24 && (c.cs != frame.BT709 || c.full) {
							continue
						}
						want, _ := frame.New(f, w, h)
						got, _ := frame.New(f, w, h)
						want.ColorSpace, want.FullRange = c.cs, c.full
						got.ColorSpace, got.FullRange = c.cs, c.full
						if err := d.Download(want, tmp); err != nil {
							t.Fatal(err)
						}
						if err := d.GainCompositeDownload(got, src, a.alpha, gain, a.bg, a.bgBlur, a.abLow, wrap, maxV); err != nil {
							t.Fatal(err)
						}
						for p := range f.NumPlanes() {
							if !bytes.Equal(got.Planes[p], want.Planes[p]) {
								t.Fatalf("workers %d %dx%d %s %v %+v plane %d differs", workers, w, h, a.name, f, c, p)
							}
						}
					}
				}
			}
		}
	}
}

func TestGainCompositeDownloadErrors(t *testing.T) {
	d := NewCPU(2)
	src := img(t, d, 8, 6, 3, nil)
	gain := img(t, d, 2, 2, 3, nil)
	g8, _ := frame.New(frame.Gray8, 8, 6)
	if err := d.GainCompositeDownload(g8, src, nil, gain, nil, nil, nil, 0, 1); !errors.Is(err, ErrShape) {
		t.Errorf("gray8: %v, want ErrShape", err)
	}
	small, _ := frame.New(frame.YUV420P, 4, 6)
	if err := d.GainCompositeDownload(small, src, nil, gain, nil, nil, nil, 0, 1); !errors.Is(err, ErrShape) {
		t.Errorf("size: %v, want ErrShape", err)
	}
	f, _ := frame.New(frame.YUV420P, 8, 6)
	a := img(t, d, 8, 6, 1, nil)
	if err := d.GainCompositeDownload(f, src, a, gain, nil, nil, nil, 0, 1); !errors.Is(err, ErrShape) {
		t.Errorf("alpha without bg: %v, want ErrShape", err)
	}
	if err := d.GainCompositeDownload(f, src, nil, src, nil, nil, nil, 0, 1); err != nil {
		t.Errorf("valid call: %v", err)
	}
}
