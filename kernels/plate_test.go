package kernels

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"testing"

	"github.com/vfxrender/vfx/frame"
)

// plateOffsets are camera-lock offsets for the plate tests: sub-pixel,
// negative, whole, on one axis, beyond the borders, and the float32
// rounding case (-1e-5 at x = 256 of a 1920 row: i + off rounds onto a
// whole column, see rows.ShiftBlocks).
func plateOffsets(w, h int) [][2]float32 {
	return [][2]float32{{0.37, -0.61}, {-3.37, 1.61}, {-1e-5, 0}, {3e-5, -1e-5}, {-39.9999, 2.5},
		{5, 0}, {0, -2.25}, {float32(w) + 2.5, -float32(h) - 1}, {-float32(w) - 3, float32(h) + 0.5}, {-0.5, 0.75},
		// Whole pixels (the camera lock's offsets): rows.Shift copies.
		{-3, 2}, {7, -5}, {1, 0}, {-float32(w) - 3, 1}, {float32(w) - 1, -float32(h) + 1}}
}

// TestCompositePlateMatchesShift checks CompositeLook.PlateX, PlateY bit
// for bit against Shift of bg and bgBlur then the composite with the
// plate as it is, for GainCompositeLook, GainCompositeLookDownload and
// GainCompositeLookFrame, with and without the look's inputs and wrap
// (the masked wrap's WrapLow is not moved).
func TestCompositePlateMatchesShift(t *testing.T) {
	const wrap, maxV = 0.4, 1.2
	for _, workers := range []int{1, 3} {
		d := NewCPU(workers)
		for _, sz := range [][2]int{{64, 40}, {37, 23}, {301, 71}, {1920, 12}, {33, 1}, {2, 2}} {
			w, h := sz[0], sz[1]
			n := w * h
			rng := newRNG(uint64(n) + 17)
			in := newLookInputs(t, d, rng, w, h)
			gain, fm, bm, sh, grain, bg, bgBlur, abLow := in.gain, in.fm, in.bm, in.sh, in.grain, in.bg, in.bgBlur, in.abLow
			wl := img(t, d, 6, 5, 3, randVals(rng, 90, 0, 1))
			src := randCodes(t, frame.YUV420P, w, h, uint64(n)+1)
			srcImg := uploaded(t, d, src, 3)
			for _, tc := range []struct {
				name string
				full bool
				look CompositeLook
				wrap bool
			}{
				{"all", false, CompositeLook{FgLow: fm, BgOldLow: bm, ShadowLow: sh, Grain: grain, GrainAmount: 0.05, GrainX: 20, GrainY: 3}, true},
				{"all-full", true, CompositeLook{FgLow: fm, BgOldLow: bm, ShadowLow: sh}, true},
				{"none-nowrap", false, CompositeLook{}, false},
				{"wrap-full", true, CompositeLook{}, true},
				// The masked wrap's light is in the frame's coordinates: not moved.
				{"wraplow", false, CompositeLook{ShadowLow: sh, WrapLow: wl}, true},
			} {
				alpha := rectMatte(t, w, h, uint64(n), tc.full)
				aImg := uploaded(t, d, alpha, 1)
				bb, ab := bgBlur, abLow
				if !tc.wrap {
					bb, ab = nil, nil
				}
				for _, off := range plateOffsets(w, h) {
					t.Run(fmt.Sprintf("w%d/%dx%d/%s/%v", workers, w, h, tc.name, off), func(t *testing.T) {
						checkPlate(t, d, plateCase{src: src, srcImg: srcImg, alpha: alpha, aImg: aImg, gain: gain,
							bg: bg, bb: bb, ab: ab, look: tc.look, wrap: wrap, maxV: maxV, off: off})
					})
				}
			}
		}
		d.Close()
	}
}

type plateCase struct {
	src, alpha       *frame.HostFrame
	srcImg, aImg     Image
	gain, bg, bb, ab Image
	look             CompositeLook
	wrap, maxV       float32
	off              [2]float32
}

// checkPlate runs one case of TestCompositePlateMatchesShift.
func checkPlate(t *testing.T, d *CPU, c plateCase) {
	w, h := c.src.Width, c.src.Height
	// The old path: the plate and its blur shifted into images.
	sbg := img(t, d, w, h, 3, nil)
	if err := d.Shift(sbg, c.bg, c.off[0], c.off[1]); err != nil {
		t.Fatal(err)
	}
	var sbb Image
	if c.bb != nil {
		sbb = img(t, d, w, h, 3, nil)
		if err := d.Shift(sbb, c.bb, c.off[0], c.off[1]); err != nil {
			t.Fatal(err)
		}
	}
	moved := c.look
	moved.PlateX, moved.PlateY = c.off[0], c.off[1]
	// GainCompositeLook, float images.
	want, got := img(t, d, w, h, 3, nil), img(t, d, w, h, 3, nil)
	if err := d.GainCompositeLook(want, c.srcImg, c.aImg, c.gain, sbg, sbb, c.ab, c.look, c.wrap, c.maxV); err != nil {
		t.Fatal(err)
	}
	if err := d.GainCompositeLook(got, c.srcImg, c.aImg, c.gain, c.bg, c.bb, c.ab, moved, c.wrap, c.maxV); err != nil {
		t.Fatal(err)
	}
	wp, gp := pixels(t, d, want), pixels(t, d, got)
	for i := range wp {
		if math.Float32bits(wp[i]) != math.Float32bits(gp[i]) {
			t.Fatalf("GainCompositeLook: value %d (x %d, y %d, channel %d) = %v, Shift then composite gives %v",
				i, i%w, i/w%h, i/(w*h), gp[i], wp[i])
		}
	}
	newDst := func(f frame.PixelFormat) *frame.HostFrame {
		fr, err := frame.New(f, w, h)
		if err != nil {
			t.Fatal(err)
		}
		fr.ColorSpace = frame.BT709
		return fr
	}
	for _, f := range []frame.PixelFormat{frame.YUV420P, frame.RGB24} {
		want, got, gotFrame := newDst(f), newDst(f), newDst(f)
		if err := d.GainCompositeLookDownload(want, c.srcImg, c.aImg, c.gain, sbg, sbb, c.ab, c.look, c.wrap, c.maxV); err != nil {
			t.Fatal(err)
		}
		if err := d.GainCompositeLookDownload(got, c.srcImg, c.aImg, c.gain, c.bg, c.bb, c.ab, moved, c.wrap, c.maxV); err != nil {
			t.Fatal(err)
		}
		if err := d.GainCompositeLookFrame(gotFrame, c.src, c.alpha, nil, c.gain, c.bg, c.bb, c.ab, moved, c.wrap, c.maxV); err != nil {
			t.Fatal(err)
		}
		for p := range want.Planes {
			if !bytes.Equal(got.Planes[p], want.Planes[p]) {
				t.Fatalf("GainCompositeLookDownload %v: plane %d differs from Shift then composite", f, p)
			}
			if !bytes.Equal(gotFrame.Planes[p], want.Planes[p]) {
				t.Fatalf("GainCompositeLookFrame %v: plane %d differs from Shift then composite", f, p)
			}
		}
	}
}

// TestCompositePlateErrors checks that a plate offset that is not finite
// is refused and that a zero offset reads the plate as it is.
func TestCompositePlateErrors(t *testing.T) {
	d := NewCPU(1)
	defer d.Close()
	const w, h = 16, 8
	rng := newRNG(5)
	gain := img(t, d, 4, 4, 3, randVals(rng, 48, 0, 2))
	bg := img(t, d, w, h, 3, randVals(rng, 3*w*h, 0, 1))
	src := img(t, d, w, h, 3, randVals(rng, 3*w*h, 0, 1))
	alpha := img(t, d, w, h, 1, blockAlpha(w, h, 3))
	out := img(t, d, w, h, 3, nil)
	nan := float32(math.NaN())
	inf := float32(math.Inf(1))
	for _, off := range [][2]float32{{nan, 0}, {0, nan}, {inf, 1}, {1, -inf}} {
		look := CompositeLook{PlateX: off[0], PlateY: off[1]}
		if err := d.GainCompositeLook(out, src, alpha, gain, bg, nil, nil, look, 0, 1); !errors.Is(err, ErrShape) {
			t.Errorf("offset %v: err = %v, want ErrShape", off, err)
		}
	}
	// Without a matte the offset is ignored, as the rest of the look.
	want, got := img(t, d, w, h, 3, nil), img(t, d, w, h, 3, nil)
	if err := d.GainCompositeLook(want, src, nil, gain, bg, nil, nil, CompositeLook{}, 0, 1); err != nil {
		t.Fatal(err)
	}
	if err := d.GainCompositeLook(got, src, nil, gain, bg, nil, nil, CompositeLook{PlateX: 3.5, PlateY: -1}, 0, 1); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(f32bytes(pixels(t, d, want)), f32bytes(pixels(t, d, got))) {
		t.Error("without a matte the plate offset changed the result")
	}
}

func f32bytes(v []float32) []byte {
	b := make([]byte, 0, 4*len(v))
	for _, x := range v {
		u := math.Float32bits(x)
		b = append(b, byte(u), byte(u>>8), byte(u>>16), byte(u>>24))
	}
	return b
}
