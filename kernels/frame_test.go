package kernels

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/vfxrender/vfx/frame"
)

// randCodes is a frame of random codes (alloc'd with frame.New).
func randCodes(t testing.TB, f frame.PixelFormat, w, h int, seed uint64) *frame.HostFrame {
	t.Helper()
	fr, err := frame.New(f, w, h)
	if err != nil {
		t.Fatal(err)
	}
	fr.ColorSpace = frame.BT709
	rng := newRNG(seed)
	for _, p := range fr.Planes {
		for i := range p {
			p[i] = byte(rng.IntN(256))
		}
	}
	return fr
}

// rectMatte is a Gray8 matte that is 0 outside a rectangle inside
// the frame (so that whole row pairs and 2x2 blocks are background) and
// blockAlpha's runs of 0, 1 and fractions inside it; full: blockAlpha
// everywhere.
func rectMatte(t testing.TB, w, h int, seed uint64, full bool) *frame.HostFrame {
	t.Helper()
	fr, err := frame.New(frame.Gray8, w, h)
	if err != nil {
		t.Fatal(err)
	}
	a := blockAlpha(w, h, seed)
	for y := range h {
		for x := range w {
			in := full || (x >= w/5 && x < w*3/5+1 && y >= h/4 && y < h*3/4+1)
			if in {
				fr.Planes[0][y*fr.Strides[0]+x] = byte(a[y*w+x]*255 + 0.5)
			}
		}
	}
	return fr
}

func uploaded(t testing.TB, d *CPU, f *frame.HostFrame, c int) Image {
	t.Helper()
	m := img(t, d, f.Width, f.Height, c, nil)
	if err := d.Upload(m, f); err != nil {
		t.Fatal(err)
	}
	return m
}

// TestResizeAreaFrameMatchesChain checks ResizeAreaFrame bit for bit
// against Upload then ResizeArea.
func TestResizeAreaFrameMatchesChain(t *testing.T) {
	for _, workers := range []int{1, 3} {
		d := NewCPU(workers)
		for _, tc := range []struct {
			f            frame.PixelFormat
			c            int
			w, h, ow, oh int
		}{
			{frame.YUV420P, 3, 64, 48, 16, 12},
			{frame.YUV420P, 3, 67, 37, 25, 14},
			{frame.YUV420P, 3, 40, 30, 40, 30},
			{frame.RGB24, 3, 51, 29, 17, 11},
			{frame.Gray8, 1, 64, 36, 24, 9},
			{frame.Gray8, 1, 64, 48, 16, 12},
			{frame.Gray8, 1, 100, 16, 25, 4}, // the 4x path: 3 blocks of 8 outputs and a tail of 1
			{frame.Gray8, 1, 30, 20, 20, 10},
			{frame.Gray8, 1, 33, 21, 33, 5},
		} {
			t.Run(fmt.Sprintf("w%d/%v/%dx%d-%dx%d", workers, tc.f, tc.w, tc.h, tc.ow, tc.oh), func(t *testing.T) {
				src := randCodes(t, tc.f, tc.w, tc.h, uint64(tc.w*tc.h))
				if tc.f == frame.Gray8 {
					// A matte's flat regions: blocks of code 0 and of
					// code 255 beside random ones.
					for y := range tc.h {
						for x := range tc.w {
							switch (x/4 + 3*(y/4)) % 3 {
							case 0:
								src.Planes[0][y*src.Strides[0]+x] = 0
							case 1:
								src.Planes[0][y*src.Strides[0]+x] = 255
							}
						}
					}
				}
				want := img(t, d, tc.ow, tc.oh, tc.c, nil)
				if err := d.ResizeArea(want, uploaded(t, d, src, tc.c)); err != nil {
					t.Fatal(err)
				}
				got := img(t, d, tc.ow, tc.oh, tc.c, nil)
				if err := d.ResizeAreaFrame(got, src); err != nil {
					t.Fatal(err)
				}
				gp, wp := pixels(t, d, got), pixels(t, d, want)
				for i := range wp {
					if gp[i] != wp[i] {
						t.Fatalf("value %d: %v, want %v", i, gp[i], wp[i])
					}
				}
			})
		}
		if err := d.ResizeAreaFrame(img(t, d, 8, 8, 1, nil), randCodes(t, frame.YUV420P, 8, 8, 1)); err == nil {
			t.Error("yuv420p into 1 channel accepted")
		}
		if err := d.ResizeAreaFrame(img(t, d, 9, 8, 3, nil), randCodes(t, frame.YUV420P, 8, 8, 1)); err == nil {
			t.Error("upsampling accepted")
		}
		d.Close()
	}
}

// TestGainCompositeLookFrameMatchesChain checks GainCompositeLookFrame,
// with and without the plate's codes, bit for bit against Upload of the
// source and matte followed by GainCompositeLookDownload
// (GainCompositeDownload without a matte), the plate still or moved: by
// whole pixels of either parity and sign (codes copied from the moved
// position, the rest converted), past the frame, or by a fraction (every
// pixel converted).
func TestGainCompositeLookFrameMatchesChain(t *testing.T) {
	const wrap, maxV = 0.4, 1.2
	for _, workers := range []int{1, 3} {
		d := NewCPU(workers)
		for _, sz := range [][2]int{{64, 40}, {37, 23}, {301, 71}, {33, 1}, {2, 2}} {
			w, h := sz[0], sz[1]
			n := w * h
			rng := newRNG(uint64(n) + 11)
			in := newLookInputs(t, d, rng, w, h)
			gain, fm, bm, sh, grain, bg, bgBlur, abLow := in.gain, in.fm, in.bm, in.sh, in.grain, in.bg, in.bgBlur, in.abLow
			type lookCase struct {
				name   string
				srcFmt frame.PixelFormat
				dstFmt frame.PixelFormat
				full   bool // matte everywhere (else a subject in the middle)
				noA    bool
				look   CompositeLook
				wrap   bool
			}
			var plates []lookCase
			for _, o := range [][2]float32{{-3, 2}, {5, -1}, {1, 1}, {0, 3}, {-2, 0}, {float32(w + 2), 0}, {0, float32(-h - 1)}, {1.5, -0.25}} {
				plates = append(plates, lookCase{fmt.Sprintf("yuv/plate%+g%+g", o[0], o[1]), frame.YUV420P, frame.YUV420P, false, false,
					CompositeLook{FgLow: fm, BgOldLow: bm, ShadowLow: sh, PlateX: o[0], PlateY: o[1]}, true})
			}
			for _, tc := range append(plates, []lookCase{
				{"yuv/all", frame.YUV420P, frame.YUV420P, false, false, CompositeLook{FgLow: fm, BgOldLow: bm, ShadowLow: sh}, true},
				{"yuv/all-full", frame.YUV420P, frame.YUV420P, true, false, CompositeLook{FgLow: fm, BgOldLow: bm, ShadowLow: sh}, true},
				{"yuv/none-nowrap", frame.YUV420P, frame.YUV420P, false, false, CompositeLook{}, false},
				{"yuv/fill", frame.YUV420P, frame.YUV420P, false, true, CompositeLook{}, true},
				{"rgb/all", frame.RGB24, frame.RGB24, false, false, CompositeLook{FgLow: fm, BgOldLow: bm, ShadowLow: sh}, true},
				{"yuv/grain", frame.YUV420P, frame.YUV420P, false, false,
					CompositeLook{FgLow: fm, BgOldLow: bm, ShadowLow: sh, Grain: grain, GrainAmount: 0.05, GrainX: 20, GrainY: 3}, true},
				{"rgb/grain", frame.RGB24, frame.RGB24, true, false, CompositeLook{Grain: grain, GrainAmount: 0.05, GrainX: 4, GrainY: 9}, true},
				{"rgb/fill", frame.RGB24, frame.RGB24, false, true, CompositeLook{}, false},
			}...) {
				t.Run(fmt.Sprintf("w%d/%dx%d/%s", workers, w, h, tc.name), func(t *testing.T) {
					src := randCodes(t, tc.srcFmt, w, h, uint64(n)+1)
					var alpha *frame.HostFrame
					var aImg Image
					if !tc.noA {
						alpha = rectMatte(t, w, h, uint64(n), tc.full)
						aImg = uploaded(t, d, alpha, 1)
					}
					bb, ab := bgBlur, abLow
					if !tc.wrap {
						bb, ab = nil, nil
					}
					newDst := func() *frame.HostFrame {
						f, err := frame.New(tc.dstFmt, w, h)
						if err != nil {
							t.Fatal(err)
						}
						f.ColorSpace = frame.BT709
						return f
					}
					want := newDst()
					var err error
					if tc.noA {
						err = d.GainCompositeDownload(want, uploaded(t, d, src, 3), nil, gain, bg, bb, ab, wrap, maxV)
					} else {
						err = d.GainCompositeLookDownload(want, uploaded(t, d, src, 3), aImg, gain, bg, bb, ab, tc.look, wrap, maxV)
					}
					if err != nil {
						t.Fatal(err)
					}
					codes := newDst()
					if err := d.Download(codes, bg); err != nil {
						t.Fatal(err)
					}
					for _, bc := range []*PlateCodes{nil, {Frame: codes}} {
						got := newDst()
						if err := d.GainCompositeLookFrame(got, src, alpha, bc, gain, bg, bb, ab, tc.look, wrap, maxV); err != nil {
							t.Fatal(err)
						}
						for p := range want.Planes {
							if !bytes.Equal(got.Planes[p], want.Planes[p]) {
								for i := range want.Planes[p] {
									if got.Planes[p][i] != want.Planes[p][i] {
										t.Logf("index %d stride %d", i, want.Strides[p])
										break
									}
								}
								t.Fatalf("bgCodes %v: plane %d differs from the chain", bc != nil, p)
							}
						}
					}
				})
			}
		}
		d.Close()
	}
}

// TestGainCompositeLookFrameErrors checks the frame op's shape checks.
func TestGainCompositeLookFrameErrors(t *testing.T) {
	d := NewCPU(1)
	defer d.Close()
	gain := img(t, d, 4, 4, 3, nil)
	bg := img(t, d, 16, 8, 3, nil)
	dst, _ := frame.New(frame.YUV420P, 16, 8)
	src := randCodes(t, frame.YUV420P, 16, 8, 1)
	a := rectMatte(t, 16, 8, 1, true)
	small := rectMatte(t, 8, 8, 1, true)
	gray, _ := frame.New(frame.Gray8, 16, 8)
	for _, tc := range []struct {
		name            string
		dst, src, alpha *frame.HostFrame
		bg              Image
	}{
		{"alpha size", dst, src, small, bg},
		{"alpha not gray", dst, src, src, bg},
		{"src gray", dst, a, a, bg},
		{"dst gray", gray, src, a, bg},
		{"no bg", dst, src, a, nil},
		{"bg size", dst, src, a, img(t, d, 8, 8, 3, nil)},
	} {
		if err := d.GainCompositeLookFrame(tc.dst, tc.src, tc.alpha, nil, gain, tc.bg, nil, nil, CompositeLook{}, 0, 1); err == nil {
			t.Errorf("%s: accepted", tc.name)
		}
	}
}

// TestSHEvalFastPathMatchesGeneral checks SHEval's one- and three-channel
// loop bit for bit against the general loop (two channels).
func TestSHEvalFastPathMatchesGeneral(t *testing.T) {
	d := NewCPU(2)
	defer d.Close()
	w, h := 53, 29
	rng := newRNG(7)
	nrm := img(t, d, w, h, 3, randNormals(rng, w*h, false))
	var cs [3]SH9
	for c := range cs {
		for k := range cs[c] {
			cs[c][k] = rng.Float32()*2 - 1
		}
	}
	three := img(t, d, w, h, 3, nil)
	if err := d.SHEval(three, nrm, cs[:]); err != nil {
		t.Fatal(err)
	}
	one := img(t, d, w, h, 1, nil)
	two := img(t, d, w, h, 2, nil)
	tp := pixels(t, d, three)
	for c := range cs {
		if err := d.SHEval(one, nrm, cs[c:c+1]); err != nil {
			t.Fatal(err)
		}
		if err := d.SHEval(two, nrm, []SH9{cs[c], cs[c]}); err != nil {
			t.Fatal(err)
		}
		op, gp := pixels(t, d, one), pixels(t, d, two)
		for i := range op {
			if op[i] != gp[i] || tp[c*w*h+i] != gp[i] {
				t.Fatalf("channel %d pixel %d: 1ch %v, 3ch %v, general %v", c, i, op[i], tp[c*w*h+i], gp[i])
			}
		}
	}
}
