package kernels

import (
	"testing"

	"github.com/vfxrender/vfx/frame"
)

// benchAreaFrame times ResizeAreaFrame of a 1080p frame to the render's
// working size (480x270).
func benchAreaFrame(b *testing.B, f frame.PixelFormat) {
	e := newBench(b)
	c := 3
	if f == frame.Gray8 {
		c = 1
	}
	hf := randFrame(f, fw, fh)
	m := e.img(480, 270, c, 0, 1)
	e.run(frameBytes(hf), func() error { return e.d.ResizeAreaFrame(m, hf) })
}

func BenchmarkResizeAreaFrameYUV420P(b *testing.B) { benchAreaFrame(b, frame.YUV420P) }
func BenchmarkResizeAreaFrameGray8(b *testing.B)   { benchAreaFrame(b, frame.Gray8) }

// BenchmarkGainCompositeLookFrame is the fused full-resolution pass of a
// 1080p frame from 8-bit source and matte to YUV420P, with the background
// codes (an ellipse subject over the background, wrap, no look inputs).
func BenchmarkGainCompositeLookFrame(b *testing.B) { benchGCLF(b, false) }

// BenchmarkGainCompositeLookFrameGrain is BenchmarkGainCompositeLookFrame
// with CompositeLook's grain (a 509x509 tile, as the renderer's).
func BenchmarkGainCompositeLookFrameGrain(b *testing.B) { benchGCLF(b, true) }

// BenchmarkGainCompositeLookFramePlate is the composite of a frame over
// a plate moved by the camera lock (-3.37, 1.61 px, no background codes to
// copy): "sample" moves it inside the composite (CompositeLook.PlateX,
// PlateY), "shift" the way it was done before, Shift of the plate and of
// its blur into two more images then the composite over them (the same
// output, bit for bit); "whole" the camera lock's plate as it is moved
// today, by whole pixels (-3, 2), its background codes copied from
// PlateCodes at the moved position.
func BenchmarkGainCompositeLookFramePlate(b *testing.B) {
	for _, mode := range []string{"sample", "shift", "whole"} {
		shift := mode == "shift"
		b.Run(mode, func(b *testing.B) {
			e := newBench(b)
			src := randFrame(frame.YUV420P, fw, fh)
			alpha, _ := frame.New(frame.Gray8, fw, fh)
			if err := e.d.Download(alpha, e.alpha(fw, fh)); err != nil {
				b.Fatal(err)
			}
			gain := e.img(480, 270, 3, 0.5, 1.5)
			bg, bgBlur := e.img(fw, fh, 3, 0, 1), e.img(fw, fh, 3, 0, 1)
			sbg, sbb := e.img(fw, fh, 3, 0, 1), e.img(fw, fh, 3, 0, 1)
			ab := e.img(240, 135, 1, 0, 1)
			dst, _ := frame.New(frame.YUV420P, fw, fh)
			dst.ColorSpace = frame.BT709
			const dx, dy = -3.37, 1.61
			var pc *PlateCodes
			if mode == "whole" {
				codes, _ := frame.New(frame.YUV420P, fw, fh)
				codes.ColorSpace = frame.BT709
				if err := e.d.Download(codes, bg); err != nil {
					b.Fatal(err)
				}
				pc = &PlateCodes{Frame: codes}
			}
			e.run(frameBytes(src)+frameBytes(alpha), func() error {
				if mode == "whole" {
					look := CompositeLook{PlateX: -3, PlateY: 2}
					return e.d.GainCompositeLookFrame(dst, src, alpha, pc, gain, bg, bgBlur, ab, look, 0.3, 1)
				}
				if !shift {
					look := CompositeLook{PlateX: dx, PlateY: dy}
					return e.d.GainCompositeLookFrame(dst, src, alpha, nil, gain, bg, bgBlur, ab, look, 0.3, 1)
				}
				if err := e.d.Shift(sbg, bg, dx, dy); err != nil {
					return err
				}
				if err := e.d.Shift(sbb, bgBlur, dx, dy); err != nil {
					return err
				}
				return e.d.GainCompositeLookFrame(dst, src, alpha, nil, gain, sbg, sbb, ab, CompositeLook{}, 0.3, 1)
			})
		})
	}
}

func benchGCLF(b *testing.B, grain bool) {
	e := newBench(b)
	var look CompositeLook
	if grain {
		look = CompositeLook{Grain: e.img(509, 509, 1, -3, 3), GrainAmount: 0.01, GrainX: 100, GrainY: 7}
	}
	src := randFrame(frame.YUV420P, fw, fh)
	am := e.alpha(fw, fh)
	alpha, _ := frame.New(frame.Gray8, fw, fh)
	if err := e.d.Download(alpha, am); err != nil {
		b.Fatal(err)
	}
	gain := e.img(480, 270, 3, 0.5, 1.5)
	bg := e.img(fw, fh, 3, 0, 1)
	bgBlur := e.img(fw, fh, 3, 0, 1)
	ab := e.img(240, 135, 1, 0, 1)
	dst, _ := frame.New(frame.YUV420P, fw, fh)
	dst.ColorSpace = frame.BT709
	codes, _ := frame.New(frame.YUV420P, fw, fh)
	codes.ColorSpace = frame.BT709
	if err := e.d.Download(codes, bg); err != nil {
		b.Fatal(err)
	}
	e.run(frameBytes(src)+frameBytes(alpha), func() error {
		return e.d.GainCompositeLookFrame(dst, src, alpha, &PlateCodes{Frame: codes}, gain, bg, bgBlur, ab, look, 0.3, 1)
	})
}

// BenchmarkGainCompositeLookFramePhoto is the composite as the photo
// fixtures (`vfx bench ffmpeg --fixtures photo-small`) run it: an x264
// matte whose background codes are small but never 0 (so every pixel is
// composited), the plate moved by the camera lock, the subject and old
// background estimates, the shadow, the wrap's light and the grain.
func BenchmarkGainCompositeLookFramePhoto(b *testing.B) {
	e := newBench(b)
	src := randFrame(frame.YUV420P, fw, fh)
	alpha, _ := frame.New(frame.Gray8, fw, fh)
	if err := e.d.Download(alpha, e.alpha(fw, fh)); err != nil {
		b.Fatal(err)
	}
	for i, c := range alpha.Planes[0] {
		alpha.Planes[0][i] = max(c, byte(2+i%5)) // the matte's noisy floor
	}
	look := CompositeLook{FgLow: e.img(480, 270, 3, 0, 1), BgOldLow: e.img(480, 270, 3, 0, 1),
		ShadowLow: e.img(480, 270, 1, 0, 0.3), WrapLow: e.img(480, 270, 3, 0, 0.5),
		Grain: e.img(509, 509, 1, -3, 3), GrainAmount: 0.01, GrainX: 100, GrainY: 7, PlateX: -3.37, PlateY: 1.61}
	gain := e.img(480, 270, 3, 0.5, 1.5)
	bg, bgBlur := e.img(fw, fh, 3, 0, 1), e.img(fw, fh, 3, 0, 1)
	ab := e.img(240, 135, 1, 0, 1)
	dst, _ := frame.New(frame.YUV420P, fw, fh)
	dst.ColorSpace = frame.BT709
	e.run(frameBytes(src)+frameBytes(alpha), func() error {
		return e.d.GainCompositeLookFrame(dst, src, alpha, nil, gain, bg, bgBlur, ab, look, 0.3, 1)
	})
}
