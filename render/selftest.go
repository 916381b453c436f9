package render

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/vfxrender/vfx/frame"
	"github.com/vfxrender/vfx/kernels"
)

// Self-test tolerances: the device's YUV420P codes may differ from the
// CPU reference's by at most SelfTestMaxCodeDiff, and at most
// SelfTestMaxDiffFraction of all codes may differ at all. The CUDA
// backend is bit-identical to the CPU on every per-pixel op; its float64
// reductions (statistics, SH fits) and double-precision log/exp differ in
// rounding only, which can move a code by one where a value sits on a
// rounding boundary.
const (
	SelfTestMaxCodeDiff     = 2
	SelfTestMaxDiffFraction = 0.01
	selfTestW, selfTestH    = 97, 65 // odd: exercises the chroma edge rules
	selfTestFrames          = 2      // the second frame uses the temporal state
)

// SelfTestResult is the outcome of SelfTest.
type SelfTestResult struct {
	Device        string
	Width, Height int
	Frames        int
	Codes         int // codes compared (every plane of every frame)
	Differing     int // codes that differ from the CPU reference
	MaxDiff       int // largest absolute code difference
	Elapsed       time.Duration
}

func (r SelfTestResult) String() string {
	return fmt.Sprintf("%s: %d frames of %dx%d match the CPU reference: %d of %d codes differ, max difference %d (limits %d, %.0f%%), %v",
		r.Device, r.Frames, r.Width, r.Height, r.Differing, r.Codes, r.MaxDiff, SelfTestMaxCodeDiff, 100*SelfTestMaxDiffFraction, r.Elapsed.Round(time.Millisecond))
}

// ErrSelfTest reports a device whose rendering does not match the CPU
// reference within the tolerances.
var ErrSelfTest = errors.New("render: self-test mismatch")

// SelfTest renders a small synthetic job (a lit subject with a soft
// matte over a prompt backdrop, two frames) on dev and on a fresh CPU
// reference device, and compares the YUV420P outputs code by code. It
// returns an error wrapping ErrSelfTest when they differ beyond the
// tolerances, or the device's error when an op fails. dev is not closed.
func SelfTest(ctx context.Context, dev kernels.Device) (SelfTestResult, error) {
	res := SelfTestResult{Device: dev.Name(), Width: selfTestW, Height: selfTestH, Frames: selfTestFrames}
	start := time.Now()
	ref := kernels.NewCPU(1)
	defer ref.Close()
	want, err := selfTestRender(ctx, ref, selfTestW, selfTestH, selfTestFrames)
	if err != nil {
		return res, fmt.Errorf("render: self-test on the CPU reference: %w", err)
	}
	got, err := selfTestRender(ctx, dev, selfTestW, selfTestH, selfTestFrames)
	if err != nil {
		return res, fmt.Errorf("render: self-test on %s: %w", dev.Name(), err)
	}
	res.Codes, res.Differing, res.MaxDiff = compareFrames(want, got)
	res.Elapsed = time.Since(start)
	if res.MaxDiff > SelfTestMaxCodeDiff || float64(res.Differing) > SelfTestMaxDiffFraction*float64(res.Codes) {
		return res, fmt.Errorf("%w: %s: %d of %d codes differ from the CPU reference, max difference %d (limits %d, %.0f%%)",
			ErrSelfTest, res.Device, res.Differing, res.Codes, res.MaxDiff, SelfTestMaxCodeDiff, 100*SelfTestMaxDiffFraction)
	}
	return res, nil
}

// compareFrames counts the codes of YUV420P frames a and b, those that
// differ and the largest difference.
func compareFrames(a, b []*frame.HostFrame) (codes, differing, maxDiff int) {
	for i := range a {
		for p := range 3 {
			x, y := a[i].Planes[p], b[i].Planes[p]
			for k := range x {
				d := int(x[k]) - int(y[k])
				if d < 0 {
					d = -d
				}
				codes++
				if d != 0 {
					differing++
					maxDiff = max(maxDiff, d)
				}
			}
		}
	}
	return codes, differing, maxDiff
}

// selfTestRender renders the self-test job at w x h on dev and returns
// its frames.
func selfTestRender(ctx context.Context, dev kernels.Device, w, h, frames int) ([]*frame.HostFrame, error) {
	p := Params{Prompt: "warm key light from the left, blue rim light, sunset", Seed: 7, Width: w, Height: h}
	r, err := New(ctx, dev, p)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	srcF, alphaF := selfTestInputs(w, h)
	var imgs []kernels.Image
	defer func() {
		for _, m := range imgs {
			dev.Free(m)
		}
	}()
	src, err := dev.NewImage(w, h, 3)
	if err != nil {
		return nil, err
	}
	imgs = append(imgs, src)
	alpha, err := dev.NewImage(w, h, 1)
	if err != nil {
		return nil, err
	}
	imgs = append(imgs, alpha)
	if err := dev.Upload(src, srcF); err != nil {
		return nil, err
	}
	if err := dev.Upload(alpha, alphaF); err != nil {
		return nil, err
	}
	var out []*frame.HostFrame
	for range frames {
		f, err := frame.New(frame.YUV420P, w, h)
		if err != nil {
			return nil, err
		}
		f.ColorSpace = frame.BT709
		if err := r.FrameHost(ctx, f, src, alpha); err != nil {
			return nil, err
		}
		out = append(out, f)
	}
	return out, nil
}

// selfTestInputs returns a deterministic YUV420P source (gradients and
// texture) and a Gray8 matte: an ellipse with a soft edge, exact 0
// outside and exact 1 inside.
func selfTestInputs(w, h int) (*frame.HostFrame, *frame.HostFrame) {
	src, _ := frame.New(frame.YUV420P, w, h)
	src.ColorSpace = frame.BT709
	for y := range h {
		for x := range w {
			v := 40 + (x*150)/w + int(20*math.Sin(float64(x*y)/37))
			src.Planes[0][y*src.Strides[0]+x] = byte(max(16, min(235, v)))
		}
	}
	for p := 1; p < 3; p++ {
		pw, ph := src.PlaneDims(p)
		for y := range ph {
			for x := range pw {
				src.Planes[p][y*src.Strides[p]+x] = byte(100 + (x*31+y*17*p)%60)
			}
		}
	}
	alpha, _ := frame.New(frame.Gray8, w, h)
	cx, cy, rx, ry := float64(w)/2, float64(h)*0.55, float64(w)*0.3, float64(h)*0.4
	for y := range h {
		for x := range w {
			dx, dy := (float64(x)+0.5-cx)/rx, (float64(y)+0.5-cy)/ry
			e := (1 - math.Sqrt(dx*dx+dy*dy)) * 8
			alpha.Planes[0][y*alpha.Strides[0]+x] = byte(255 * max(0, min(1, e)))
		}
	}
	return src, alpha
}
