package kernels

import (
	"math"
	"testing"

	"github.com/vfxrender/vfx/frame"
)

// subjectMatte is a Gray8 matte like a segmenter's: an upright ellipse
// covering about 20% of the frame with a soft edge (~30 px) over 0.
func subjectMatte(w, h int) *frame.HostFrame {
	hf, err := frame.New(frame.Gray8, w, h)
	if err != nil {
		panic(err)
	}
	for y := range h {
		for x := range w {
			dx := (float64(x) - 0.5*float64(w)) / (0.2 * float64(w))
			dy := (float64(y) - 0.55*float64(h)) / (0.32 * float64(h))
			r := math.Sqrt(dx*dx + dy*dy)
			a := math.Max(0, math.Min(1, (1.04-r)*12))
			hf.Planes[0][y*hf.Strides[0]+x] = byte(math.Round(255 * a))
		}
	}
	return hf
}

// fullResEnv holds the images of the per-frame full-resolution path of
// render.Frame at 1920x1080 (low resolution 480x270, wrap matte 240x135).
type fullResEnv struct {
	e                           *benchEnv
	srcF, matteF, outF          *frame.HostFrame
	src, alpha, srcLow, alphaLo Image
	gain, bg, bgBlur, abLow     Image
	dst                         Image
}

func newFullResEnv(b *testing.B) *fullResEnv {
	e := newBench(b)
	d := e.d
	r := &fullResEnv{e: e, srcF: randFrame(frame.YUV420P, fw, fh), matteF: subjectMatte(fw, fh)}
	var err error
	if r.outF, err = frame.New(frame.YUV420P, fw, fh); err != nil {
		b.Fatal(err)
	}
	r.outF.ColorSpace = frame.BT709
	r.src, r.alpha = e.img(fw, fh, 3, 0, 1), e.img(fw, fh, 1, 0, 1)
	r.srcLow, r.alphaLo = e.img(lw, lh, 3, 0, 1), e.img(lw, lh, 1, 0, 1)
	r.gain = e.img(lw, lh, 3, 0.7, 1.3)
	r.bg, r.bgBlur = e.img(fw, fh, 3, 0, 1), e.img(fw, fh, 3, 0.1, 0.9)
	r.dst = e.img(fw, fh, 3, 0, 1)
	// The wrap matte as render builds it: the half-low-resolution matte,
	// blurred.
	if err := d.Upload(r.alpha, r.matteF); err != nil {
		b.Fatal(err)
	}
	aq, abl := e.img(lw/2, lh/2, 1, 0, 1), e.img(lw/2, lh/2, 1, 0, 1)
	if err := d.ResizeArea(aq, r.alpha); err != nil {
		b.Fatal(err)
	}
	if err := d.GaussianBlur(abl, aq, 6); err != nil {
		b.Fatal(err)
	}
	r.abLow = abl
	return r
}

// front runs the part shared by both variants: uploads and the
// low-resolution copies.
func (r *fullResEnv) front() error {
	d := r.e.d
	if err := d.Upload(r.src, r.srcF); err != nil {
		return err
	}
	if err := d.Upload(r.alpha, r.matteF); err != nil {
		return err
	}
	if err := d.ResizeArea(r.srcLow, r.src); err != nil {
		return err
	}
	return d.ResizeArea(r.alphaLo, r.alpha)
}

// BenchmarkFullResPath1080p is the per-frame full-resolution sequence of a
// render job: Upload YUV source, Upload Gray8 matte, ResizeArea of both to
// 480x270, GainComposite (soft subject matte over ~20% of the frame, with
// light wrap), Download YUV420P.
func BenchmarkFullResPath1080p(b *testing.B) {
	r := newFullResEnv(b)
	d := r.e.d
	r.e.run(frameBytes(r.srcF)+frameBytes(r.matteF)+frameBytes(r.outF), func() error {
		if err := r.front(); err != nil {
			return err
		}
		if err := d.GainComposite(r.dst, r.src, r.alpha, r.gain, r.bg, r.bgBlur, r.abLow, 0.4, 1); err != nil {
			return err
		}
		return d.Download(r.outF, r.dst)
	})
}

// BenchmarkGainCompositeSubject1080p is GainComposite alone on the
// realistic matte of BenchmarkFullResPath1080p.
func BenchmarkGainCompositeSubject1080p(b *testing.B) {
	r := newFullResEnv(b)
	if err := r.front(); err != nil {
		b.Fatal(err)
	}
	r.e.run(px(fw, fh, 13), func() error {
		return r.e.d.GainComposite(r.dst, r.src, r.alpha, r.gain, r.bg, r.bgBlur, r.abLow, 0.4, 1)
	})
}

// BenchmarkFullResPath1080pFused is BenchmarkFullResPath1080p with
// GainComposite and Download replaced by GainCompositeDownload.
func BenchmarkFullResPath1080pFused(b *testing.B) {
	r := newFullResEnv(b)
	d := r.e.d
	r.e.run(frameBytes(r.srcF)+frameBytes(r.matteF)+frameBytes(r.outF), func() error {
		if err := r.front(); err != nil {
			return err
		}
		return d.GainCompositeDownload(r.outF, r.src, r.alpha, r.gain, r.bg, r.bgBlur, r.abLow, 0.4, 1)
	})
}
