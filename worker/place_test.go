package worker

import (
	"context"
	"image/png"
	"os"
	"testing"

	"github.com/vfxrender/vfx/frame"
	"github.com/vfxrender/vfx/job"
	"github.com/vfxrender/vfx/kernels"
)

// TestRunPlacement: an image job with a placement renders the subject
// moved (the render differs from the job without one, on both the host
// path and the passes path), keeps the source's matte as its alpha output
// and gives the foreground the placed matte (the matte placed by
// kernels.Place, within one code).
func TestRunPlacement(t *testing.T) {
	fx := fixture(t, 80, 60, 2)
	pl := job.Placement{Scale: 0.5, X: 0.25, Y: 0.1}
	run := func(p *job.Placement, fg bool) Result {
		res, err := runReq(newPipeline(), context.Background(), RenderRequest{
			JobRequest: job.JobRequest{GenerationType: "image", AlphaMode: "custom", Prompt: "warm key light from the left",
				Seed: 2, Placement: p, Foreground: fg},
			Source: in(fx.Still), Alpha: in(fx.StillMatte), Reference: in(fx.Reference), CRF: -1,
		}, t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	plain, placedHost, placedFG := run(nil, false), run(&pl, false), run(&pl, true)
	_, r0 := decodeAll(t, plain.Render, frame.RGB24)
	for name, res := range map[string]Result{"host": placedHost, "passes": placedFG} {
		_, r := decodeAll(t, res.Render, frame.RGB24)
		if maxDiff(r[0].Planes[0], r0[0].Planes[0]) < 40 {
			t.Errorf("%s: the placed render is nearly the unplaced one", name)
		}
		_, a := decodeAll(t, res.Alpha, frame.Gray8)
		_, m := decodeAll(t, fx.StillMatte, frame.Gray8)
		if d := maxDiff(a[0].Planes[0], m[0].Planes[0]); d > 1 {
			t.Errorf("%s: the alpha output differs from the source's matte by %d codes", name, d)
		}
	}
	// The foreground's alpha is the placed matte.
	_, m := decodeAll(t, placedFG.Alpha, frame.Gray8)
	d := kernels.NewCPU(1)
	defer d.Close()
	src, _ := d.NewImage(80, 60, 1)
	dst, _ := d.NewImage(80, 60, 1)
	if err := d.Upload(src, m[0]); err != nil {
		t.Fatal(err)
	}
	if err := d.Place(dst, src, kernels.Placement{Scale: pl.Scale, X: pl.X, Y: pl.Y}, true); err != nil {
		t.Fatal(err)
	}
	want, _ := frame.New(frame.Gray8, 80, 60)
	if err := d.Download(want, dst); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(placedFG.Foreground)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	worst, moved := 0, 0
	for y := range 60 {
		for x := range 80 {
			_, _, _, a := img.At(x, y).RGBA()
			g, w := int(a>>8), int(want.Planes[0][y*want.Strides[0]+x])
			worst = max(worst, abs(g-w))
			if g != int(m[0].Planes[0][y*m[0].Strides[0]+x]) {
				moved++
			}
		}
	}
	if worst > 1 || moved < 100 {
		t.Errorf("foreground alpha: %d codes from the placed matte (want <= 1), %d pixels differ from the unplaced one (want >= 100); bounds %v", worst, moved, img.Bounds())
	}
}

func abs(v int) int {
	if v < 0 {
		return -v
	}
	return v
}
