package render

import (
	"context"
	"math"
	"syscall"
	"testing"

	"github.com/vfxrender/vfx/frame"
	"github.com/vfxrender/vfx/kernels"
	"github.com/vfxrender/vfx/render/camfit"
)

// texture is a smooth, aperiodic texture at (x, y).
func texture(x, y float64) float64 {
	return 0.3 + 0.1*math.Sin(0.21*x+0.5*math.Sin(0.05*y)) + 0.08*math.Sin(0.17*y-0.3*x*0.1) +
		0.06*math.Sin(0.07*x+0.11*y) + 0.04*math.Sin(0.31*x-0.23*y)
}

// panScene is frame k of a camera that pans by (vx, vy) pixels a frame
// over a textured background, with a disc subject of its own texture
// that moves its own way.
func panScene(w, h, k int, vx, vy float64) scene {
	s := scene{w: w, h: h, src: make([]float32, 3*w*h), alpha: make([]float32, w*h)}
	n := w * h
	cx, cy, rad := float64(w)*0.4+3*float64(k), float64(h)*0.55, 0.25*float64(min(w, h))
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			// The background at x now was at x - k*v.
			b := texture(float64(x)-float64(k)*vx, float64(y)-float64(k)*vy)
			d := math.Hypot(float64(x)+0.5-cx, float64(y)+0.5-cy)
			a := math.Min(1, math.Max(0, rad-d+0.5))
			f := 0.5 + 0.1*math.Sin(float64(x)*0.9)
			i := y*w + x
			for c := 0; c < 3; c++ {
				s.src[c*n+i] = float32(a*f + (1-a)*b*(1+0.1*float64(c)))
			}
			s.alpha[i] = float32(a)
		}
	}
	return s
}

// texturedRef is a reference image of the texture.
func texturedRef(w, h int) *frame.HostFrame {
	f, _ := frame.New(frame.RGB24, w, h)
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			v := byte(math.Round(255 * texture(1.7*float64(x), 1.3*float64(y))))
			f.Planes[0][y*f.Strides[0]+3*x], f.Planes[0][y*f.Strides[0]+3*x+1], f.Planes[0][y*f.Strides[0]+3*x+2] = v, v/2+40, 255-v
		}
	}
	return f
}

// renderPan renders frames frames of panScene and returns the outputs and
// the renderer's motion after each.
func renderPan(t *testing.T, d kernels.Device, p Params, frames int, vx, vy float64) ([][]float32, [][4]float64) {
	t.Helper()
	ctx := context.Background()
	r := newRenderer(t, d, p)
	src, alpha, dst := upload(t, d, p.Width, p.Height, 3, nil), upload(t, d, p.Width, p.Height, 1, nil), upload(t, d, p.Width, p.Height, 3, nil)
	var outs [][]float32
	var motion [][4]float64
	for k := 0; k < frames; k++ {
		s := panScene(p.Width, p.Height, k, vx, vy)
		if err := d.WritePixels(src, s.src); err != nil {
			t.Fatal(err)
		}
		if err := d.WritePixels(alpha, s.alpha); err != nil {
			t.Fatal(err)
		}
		if err := r.Frame(ctx, dst, src, alpha); err != nil {
			t.Fatal(err)
		}
		outs = append(outs, read(t, d, dst))
		sx, sy, tx, ty := r.Motion()
		motion = append(motion, [4]float64{sx, sy, tx, ty})
	}
	return outs, motion
}

// TestCameraLockPan: on a pan of (2.3, -1.1) pixels a frame, the camera
// stage measures it within 0.1 px a frame after the first frame, the
// plate moves by the accumulated motion rounded to whole pixels (measured
// on the output with camfit.Shift, away from the subject: whole steps, 2
// or 3 px in x), and the same inputs give the same bytes.
func TestCameraLockPan(t *testing.T) {
	d := newDev(t)
	const w, h, vx, vy = 192, 128, 2.3, -1.1
	p := Params{Reference: texturedRef(160, 120), Seed: 5, Width: w, Height: h}
	outs, motion := renderPan(t, d, p, 5, vx, vy)
	if motion[0] != [4]float64{} {
		t.Fatalf("first frame: motion %v", motion[0])
	}
	for k := 1; k < len(motion); k++ {
		m := motion[k]
		if math.Abs(m[0]-vx) > 0.1 || math.Abs(m[1]-vy) > 0.1 {
			t.Fatalf("frame %d: step (%.3f, %.3f), want (%.1f, %.1f)", k, m[0], m[1], vx, vy)
		}
		if math.Abs(m[2]-float64(k)*vx) > 0.1*float64(k) {
			t.Fatalf("frame %d: total x %.3f, want %.1f", k, m[2], float64(k)*vx)
		}
	}
	// The plate moved in the output as the source's background did, by
	// whole pixels.
	n := w * h
	for k := 1; k < len(outs); k++ {
		a := panScene(w, h, k, vx, vy).alpha
		ox, oy, ok := camfit.Shift(luma32(outs[k-1], n), a, luma32(outs[k], n), a, w, h, 12)
		wx := math.Round(motion[k][2]) - math.Round(motion[k-1][2])
		wy := math.Round(motion[k][3]) - math.Round(motion[k-1][3])
		if !ok || math.Abs(ox-wx) > 0.3 || math.Abs(oy-wy) > 0.3 || math.Abs(wx-vx) > 1 || math.Abs(wy-vy) > 1 {
			t.Fatalf("frame %d: the plate moved (%.3f, %.3f) ok %v, want (%.0f, %.0f), the pan (%.1f, %.1f)", k, ox, oy, ok, wx, wy, vx, vy)
		}
	}
	again, _ := renderPan(t, d, p, 5, vx, vy)
	for k := range outs {
		for i := range outs[k] {
			if outs[k][i] != again[k][i] {
				t.Fatalf("frame %d: not deterministic at %d", k, i)
			}
		}
	}
	// NoCameraLock: a still plate.
	p.NoCameraLock = true
	_, still := renderPan(t, d, p, 3, vx, vy)
	if still[2] != [4]float64{} {
		t.Fatalf("NoCameraLock: motion %v", still[2])
	}
}

// TestCameraLockedOff: a still camera keeps a still plate (the motion is
// exactly 0 and the background is the same bytes frame to frame) while
// the subject moves.
func TestCameraLockedOff(t *testing.T) {
	d := newDev(t)
	const w, h = 192, 128
	p := Params{Reference: texturedRef(160, 120), Seed: 5, Width: w, Height: h}
	outs, motion := renderPan(t, d, p, 4, 0, 0)
	n := w * h
	for k := 1; k < len(outs); k++ {
		if motion[k] != [4]float64{} {
			t.Fatalf("frame %d: motion %v on a still camera", k, motion[k])
		}
		// Far from the subject (it moves 3 px a frame; its shadow and wrap
		// stay near it), the background is unchanged.
		for y := 0; y < 20; y++ {
			for x := 0; x < w; x++ {
				for c := 0; c < 3; c++ {
					if i := c*n + y*w + x; outs[k][i] != outs[0][i] {
						t.Fatalf("frame %d: background (%d, %d) changed: %v, %v", k, x, y, outs[k][i], outs[0][i])
					}
				}
			}
		}
	}
}

// luma32 is the luminance of planar linear RGB.
func luma32(p []float32, n int) []float32 {
	y := make([]float32, n)
	for i := range y {
		y[i] = 0.2126*p[i] + 0.7152*p[n+i] + 0.0722*p[2*n+i]
	}
	return y
}

// BenchmarkCamera1080p is the camera stage's cost a frame at 1080p (CPU):
// the motion's fit at the working resolution. A moving camera's plate is
// moved by the composite itself (kernels.CompositeLook.PlateX, PlateY;
// BenchmarkGainCompositeLookFramePlate in kernels), not here.
func BenchmarkCamera1080p(b *testing.B) {
	for _, moving := range []bool{false, true} {
		b.Run(map[bool]string{false: "still", true: "moving"}[moving], func(b *testing.B) {
			d := kernels.NewCPU(0)
			defer d.Close()
			const w, h = 1920, 1080
			lw, lh := lowSize(w, h)
			f, err := newLowFrame(d, d.Ops(), lw, lh, false)
			if err != nil {
				b.Fatal(err)
			}
			defer f.free(d)
			c := newCameraStage(d, d.Ops(), w, h, false)
			defer c.free()
			frames := make([]scene, 2)
			for k := range frames {
				frames[k] = panScene(lw, lh, k, map[bool]float64{false: 0, true: 1.3}[moving], 0)
			}
			if moving {
				// The two frames alternate (+1.3, then -1.3 px): an offset
				// keeps the total off zero, so every frame moves the plate.
				c.dx = 0.5
			}
			var ru0 syscall.Rusage
			syscall.Getrusage(syscall.RUSAGE_SELF, &ru0)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				s := frames[i%2]
				if err := d.WritePixels(f.srcLow, s.src); err != nil {
					b.Fatal(err)
				}
				if err := d.WritePixels(f.alphaLow, s.alpha); err != nil {
					b.Fatal(err)
				}
				if err := d.Ops().Luma(f.luma, f.srcLow); err != nil {
					b.Fatal(err)
				}
				if err := c.run(f); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			var ru1 syscall.Rusage
			syscall.Getrusage(syscall.RUSAGE_SELF, &ru1)
			cpu := ru1.Utime.Nano() + ru1.Stime.Nano() - ru0.Utime.Nano() - ru0.Stime.Nano()
			b.ReportMetric(float64(cpu)/1e6/float64(b.N), "cpu-ms/frame")
			if moving && !c.moved {
				b.Fatal("the plate did not move")
			}
		})
	}
}
