package worker

import (
	"context"
	"testing"

	"github.com/vfxrender/vfx/bench"
	"github.com/vfxrender/vfx/frame"
)

// meanJ is the mean IoU (both thresholded at 128) of two Gray8 sequences.
func meanJ(t *testing.T, got, want []*frame.HostFrame) float64 {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d alpha frames, want %d", len(got), len(want))
	}
	var sum float64
	for i := range got {
		var in, un int
		g, w := got[i], want[i]
		for y := 0; y < w.Height; y++ {
			for x := 0; x < w.Width; x++ {
				a := g.Planes[0][y*g.Strides[0]+x] >= 128
				b := w.Planes[0][y*w.Strides[0]+x] >= 128
				if a && b {
					in++
				}
				if a || b {
					un++
				}
			}
		}
		if un > 0 {
			sum += float64(in) / float64(un)
		} else {
			sum++
		}
	}
	return sum / float64(len(got))
}

func TestRunVideoSelect(t *testing.T) {
	c := bench.MatteSuite(192, 108, 16)[0]
	dir := t.TempDir()
	fx, err := bench.WriteMatteCase(context.Background(), dir, c, 7)
	if err != nil {
		t.Fatal(err)
	}
	res, err := newPipeline().Run(context.Background(), Request{
		GenerationType: "video", Source: in(fx.Source), AlphaMode: "select", Alpha: in(fx.Keyframes[7]),
		AlphaKeyframeIndex: 7, Prompt: "cool studio light", Seed: 1, CRF: -1, Preset: "ultrafast",
	}, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if res.Frames != 16 || res.Matte != "select" {
		t.Fatalf("result %+v", res)
	}
	_, want := decodeAll(t, fx.Matte, frame.Gray8)
	_, got := decodeAll(t, res.Alpha, frame.Gray8)
	// Propagated forward and backward from frame 7.
	if j := meanJ(t, got, want); j < 0.9 {
		t.Errorf("select alpha: mean J %.3f against the exact matte, want >= 0.9", j)
	}
	// The keyframe itself is the given matte.
	if d := maxDiff(got[7].Planes[0], want[7].Planes[0]); d > 16 {
		t.Errorf("keyframe alpha differs from the given matte by %d codes", d)
	}
}

func TestRunImageSelectResampled(t *testing.T) {
	big := fixture(t, 128, 96, 1)
	small := fixture(t, 64, 48, 1) // the same scene at half size: same aspect ratio
	res, err := newPipeline().Run(context.Background(), Request{
		GenerationType: "image", Source: in(big.Still), AlphaMode: "select", Alpha: in(small.StillMatte),
		Prompt: "sunset", Seed: 1, CRF: -1,
	}, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	_, want := decodeAll(t, big.StillMatte, frame.Gray8)
	_, got := decodeAll(t, res.Alpha, frame.Gray8)
	if j := meanJ(t, got, want); j < 0.9 {
		t.Errorf("resampled keyframe: J %.3f, want >= 0.9", j)
	}
	// At the same size the keyframe is used as given.
	res, err = newPipeline().Run(context.Background(), Request{
		GenerationType: "image", Source: in(big.Still), AlphaMode: "select", Alpha: in(big.StillMatte),
		AlphaKeyframeIndex: 3, Prompt: "sunset", Seed: 1, CRF: -1, // the index is ignored for images
	}, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	_, got = decodeAll(t, res.Alpha, frame.Gray8)
	if d := maxDiff(got[0].Planes[0], want[0].Planes[0]); d != 0 {
		t.Errorf("image keyframe not used as given: differs by %d codes", d)
	}
}

func TestRunAuto(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		c      *bench.MatteCase
		method string
		minJ   float64
	}{
		{bench.AutoSuite(192, 108, 16)[0], "auto/chroma", 0.9},
		{bench.AutoSuite(192, 108, 16)[1], "auto/static", 0.85},
	} {
		t.Run(tc.c.Name, func(t *testing.T) {
			fx, err := bench.WriteMatteCase(context.Background(), dir, tc.c, 0)
			if err != nil {
				t.Fatal(err)
			}
			res, err := newPipeline().Run(context.Background(), Request{
				GenerationType: "video", Source: in(fx.Source), AlphaMode: "auto", Prompt: "neon night", CRF: -1, Preset: "ultrafast",
			}, t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			if res.Matte != tc.method {
				t.Fatalf("auto chose %q, want %q", res.Matte, tc.method)
			}
			_, want := decodeAll(t, fx.Matte, frame.Gray8)
			_, got := decodeAll(t, res.Alpha, frame.Gray8)
			if j := meanJ(t, got, want); j < tc.minJ {
				t.Errorf("mean J %.3f, want >= %.2f", j, tc.minJ)
			}
		})
	}
	// An image: no screen, no clip to take a plate from: the centre prior.
	fx, err := bench.WriteMatteCase(context.Background(), dir, bench.AutoSuite(96, 64, 1)[2], 0)
	if err != nil {
		t.Fatal(err)
	}
	res, err := newPipeline().Run(context.Background(), Request{
		GenerationType: "image", Source: in(fx.Stills[0]), AlphaMode: "auto", Prompt: "neon night", CRF: -1,
	}, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if res.Matte != "auto/centre" {
		t.Errorf("image auto chose %q, want auto/centre", res.Matte)
	}
}
