package render

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"testing"

	"github.com/vfxrender/vfx/frame"
	"github.com/vfxrender/vfx/kernels"
)

// hostScene is a decoded frame pair: a disc subject at (cx, cy) over a
// gradient, as 8-bit source (format f) and Gray8 matte.
func hostScene(t testing.TB, f frame.PixelFormat, w, h int, cx, cy float64) (src, alpha *frame.HostFrame) {
	t.Helper()
	var err error
	if src, err = frame.New(f, w, h); err != nil {
		t.Fatal(err)
	}
	src.ColorSpace = frame.BT709
	if alpha, err = frame.New(frame.Gray8, w, h); err != nil {
		t.Fatal(err)
	}
	rad := 0.3 * float64(min(w, h))
	for y := range h {
		for x := range w {
			d := math.Hypot(float64(x)+0.5-cx, float64(y)+0.5-cy)
			a := math.Min(1, math.Max(0, (rad-d)/3+0.5))
			alpha.Planes[0][y*alpha.Strides[0]+x] = byte(255*a + 0.5)
			tex := 0.5 + 0.3*math.Sin(float64(x)*0.3)*math.Cos(float64(y)*0.2)
			v := a*tex + (1-a)*float64(x+y)/float64(w+h)
			switch f {
			case frame.YUV420P:
				src.Planes[0][y*src.Strides[0]+x] = byte(16 + 219*v)
				if x%2 == 0 && y%2 == 0 {
					src.Planes[1][y/2*src.Strides[1]+x/2] = byte(128 + 40*math.Sin(float64(x)*0.05))
					src.Planes[2][y/2*src.Strides[2]+x/2] = byte(128 + 30*a)
				}
			case frame.RGB24:
				p := src.Planes[0][y*src.Strides[0]+3*x:]
				p[0], p[1], p[2] = byte(255*v), byte(200*v*a+30), byte(255*(1-v))
			}
		}
	}
	return src, alpha
}

// TestFrameFromHostMatchesFrameHost checks that rendering from the host
// frames gives the bytes of FrameHost on their uploads, frame after frame
// (the temporal state included), with and without a matte.
func TestFrameFromHostMatchesFrameHost(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		f    frame.PixelFormat
		w, h int
		fill bool
		ref  bool
		// grainy: a grainy reference, so that plate matching adds grain
		// (checked) and matches the black level.
		grainy bool
	}{
		{frame.YUV420P, 96, 64, false, true, false},
		{frame.YUV420P, 90, 54, false, false, false},
		{frame.YUV420P, 64, 48, true, false, false},
		{frame.RGB24, 81, 47, false, true, false},
		{frame.YUV420P, 96, 64, false, true, true},
		{frame.RGB24, 81, 47, false, true, true},
	} {
		t.Run(fmt.Sprintf("%v/%dx%d/fill=%v/grainy=%v", tc.f, tc.w, tc.h, tc.fill, tc.grainy), func(t *testing.T) {
			d := newDev(t)
			p := Params{Prompt: "warm key light from the left, sunny beach", Seed: 3, Width: tc.w, Height: tc.h, Fill: tc.fill}
			if tc.ref {
				p.Reference = flatRef(40, 30, [3]uint8{200, 120, 60})
			}
			if tc.grainy {
				p.Reference = grainyRef(tc.w, tc.h, 5)
			}
			a, err := New(ctx, d, p)
			if err != nil {
				t.Fatal(err)
			}
			defer a.Close()
			b, err := New(ctx, d, p)
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			srcImg := upload(t, d, tc.w, tc.h, 3, nil)
			aImg := upload(t, d, tc.w, tc.h, 1, nil)
			for i := range 4 {
				src, alpha := hostScene(t, tc.f, tc.w, tc.h, float64(tc.w)*(0.35+0.1*float64(i)), float64(tc.h)*0.55)
				want, got := bt709Frame(t, tc.f, tc.w, tc.h), bt709Frame(t, tc.f, tc.w, tc.h)
				if err := d.Upload(srcImg, src); err != nil {
					t.Fatal(err)
				}
				if err := d.Upload(aImg, alpha); err != nil {
					t.Fatal(err)
				}
				var ai kernels.Image = aImg
				if tc.fill {
					ai = nil
				}
				if err := a.FrameHost(ctx, want, srcImg, ai); err != nil {
					t.Fatal(err)
				}
				if err := b.FrameFromHost(ctx, got, src, alpha); err != nil {
					t.Fatal(err)
				}
				for k := range want.Planes {
					if !bytes.Equal(got.Planes[k], want.Planes[k]) {
						t.Fatalf("frame %d: plane %d differs", i, k)
					}
				}
			}
			if _, _, g, _ := b.PlateMatch(); tc.grainy && g == 0 {
				t.Fatal("no grain added over the grainy reference")
			}
			small, _ := frame.New(tc.f, 8, 8)
			if err := b.FrameFromHost(ctx, small, small, small); err == nil {
				t.Error("wrong size accepted")
			}
		})
	}
}

// bt709Frame is an empty host frame tagged BT.709.
func bt709Frame(t *testing.T, f frame.PixelFormat, w, h int) *frame.HostFrame {
	t.Helper()
	o, err := frame.New(f, w, h)
	if err != nil {
		t.Fatal(err)
	}
	o.ColorSpace = frame.BT709
	return o
}
