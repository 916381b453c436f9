package worker

import (
	"context"
	"image"
	"image/color"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/vfxrender/vfx/codec"
	"github.com/vfxrender/vfx/frame"
	"github.com/vfxrender/vfx/job"
)

func savePNG(t *testing.T, path string, m image.Image) string {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := png.Encode(f, m); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// The select keyframe reaches the propagation as floats: an RGBA cut-out
// gives its alpha, an opaque RGB its Rec.709 luminance, and a 16-bit
// alpha keeps more than 256 levels when resampled to the flow size.
func TestDecodeKeyframeFormats(t *testing.T) {
	const w, h = 64, 48
	dir := t.TempDir()
	r := image.Rect(0, 0, w, h)
	ctx := context.Background()
	lim := codec.DefaultLimits()

	cut := image.NewNRGBA(r)
	rgb := image.NewNRGBA(r)
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			cut.SetNRGBA(x, y, color.NRGBA{R: 200, G: uint8(x * 3), B: 40, A: uint8(x*4 + y)})
			rgb.SetNRGBA(x, y, color.NRGBA{R: uint8(x * 4), G: uint8(y * 5), B: 90, A: 255})
		}
	}
	got, err := decodeKeyframe(ctx, codec.FileInput(savePNG(t, filepath.Join(dir, "cut.png"), cut)), lim, w, h)
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range got {
		if want := float64(cut.NRGBAAt(i%w, i/w).A) / 255; math.Abs(float64(v)-want) > 1e-6 {
			t.Fatalf("cut-out pixel %d: %.5f, want the alpha %.5f", i, v, want)
		}
	}
	got, err = decodeKeyframe(ctx, codec.FileInput(savePNG(t, filepath.Join(dir, "rgb.png"), rgb)), lim, w, h)
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range got {
		c := rgb.NRGBAAt(i%w, i/w)
		want := (0.2126*float64(c.R) + 0.7152*float64(c.G) + 0.0722*float64(c.B)) / 255
		if math.Abs(float64(v)-want) > 1.0/255 {
			t.Fatalf("rgb pixel %d: %.4f, want the luminance %.4f", i, v, want)
		}
	}

	deep := image.NewNRGBA64(r)
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			deep.SetNRGBA64(x, y, color.NRGBA64{R: 9000, G: 30000, B: 100, A: uint16((y*w + x) * 65535 / (w*h - 1))})
		}
	}
	got, err = decodeKeyframe(ctx, codec.FileInput(savePNG(t, filepath.Join(dir, "deep.png"), deep)), lim, w/2, h/2)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[float32]bool{}
	for _, v := range got {
		if v < 0 || v > 1 {
			t.Fatalf("value %v outside [0, 1]", v)
		}
		seen[v] = true
	}
	if len(seen) <= 256 {
		t.Errorf("a 16-bit alpha at the flow size has %d levels, want > 256", len(seen))
	}
}

// A custom image matte exported as an RGBA cut-out is its alpha: the
// alpha output (and so the render's matte) is the cut-out's alpha exactly,
// not the luminance of its colour.
func TestRunImageCustomCutout(t *testing.T) {
	fx := fixture(t, 64, 48, 1)
	cut := image.NewNRGBA(image.Rect(0, 0, 64, 48))
	for y := 0; y < 48; y++ {
		for x := 0; x < 64; x++ {
			cut.SetNRGBA(x, y, color.NRGBA{R: 30, G: uint8(x * 4), B: 200, A: uint8(x*3 + y*2)})
		}
	}
	path := savePNG(t, filepath.Join(t.TempDir(), "cut.png"), cut)
	res, err := runReq(newPipeline(), context.Background(), RenderRequest{
		JobRequest: job.JobRequest{GenerationType: "image", AlphaMode: "custom", Prompt: "sunset", Seed: 1},
		Source:     in(fx.Still),
		Alpha:      in(path),
		CRF:        -1,
	}, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	_, got := decodeAll(t, res.Alpha, frame.Gray8)
	for y := 0; y < 48; y++ {
		for x := 0; x < 64; x++ {
			if g, w := got[0].Planes[0][y*got[0].Strides[0]+x], cut.NRGBAAt(x, y).A; g != w {
				t.Fatalf("alpha output (%d,%d) = %d, want the cut-out's alpha %d", x, y, g, w)
			}
		}
	}
}
