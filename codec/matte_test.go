package codec

import (
	"bytes"
	"context"
	"image"
	"image/color"
	"image/png"
	"os"
	"path/filepath"
	"testing"

	"github.com/vfxrender/vfx/frame"
)

// pngOf encodes m with Go's encoder, which picks the PNG colour type from
// the image: RGB for an opaque NRGBA, RGBA otherwise, 16-bit grey for
// Gray16, RGB48 or RGBA64 for an opaque or translucent NRGBA64.
func pngOf(t *testing.T, m image.Image) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := png.Encode(&buf, m); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// matteOf decodes in's only frame as Gray16 at w x h (0, 0: its own size)
// and returns its samples in [0, 65535].
func matteOf(t *testing.T, in Input, w, h int) []uint16 {
	t.Helper()
	_, fs := decodeAll(t, in, DecodeOptions{Format: frame.Gray16, Width: w, Height: h})
	f := fs[0]
	if f.Format != frame.Gray16 {
		t.Fatalf("decoded %v, want gray16", f.Format)
	}
	out := make([]uint16, 0, f.Width*f.Height)
	for y := 0; y < f.Height; y++ {
		for x := 0; x < f.Width; x++ {
			out = append(out, f.Gray16At(x, y))
		}
	}
	return out
}

// luma709 is the Rec.709 luminance of code values.
func luma709(r, g, b float64) float64 { return 0.2126*r + 0.7152*g + 0.0722*b }

// A keyframe or custom matte as roto tools export it: RGB gives its
// luminance (Rec.709 weights), RGBA its alpha where the alpha is not all
// opaque (nor, on an image, all transparent) and else its luminance, grey
// with alpha its alpha, 16-bit PNGs their 16 bits. Both Gray8 and Gray16
// outputs follow the rule.
func TestMatteFromRotoFormats(t *testing.T) {
	const w, h = 64, 48
	rgb := func(x, y int) (uint8, uint8, uint8) { return uint8(x * 4), uint8(y * 5), uint8(255 - 3*x) }
	nrgba := func(alpha func(x, y int) uint8) *image.NRGBA {
		m := image.NewNRGBA(image.Rect(0, 0, w, h))
		for y := 0; y < h; y++ {
			for x := 0; x < w; x++ {
				r, g, b := rgb(x, y)
				m.SetNRGBA(x, y, color.NRGBA{r, g, b, alpha(x, y)})
			}
		}
		return m
	}
	partial := func(x, y int) uint8 { return uint8((x*4 + y*3) % 256) }
	luma := func(x, y int) float64 {
		r, g, b := rgb(x, y)
		return luma709(float64(r), float64(g), float64(b))
	}
	dir := t.TempDir()
	opaque := pngOf(t, nrgba(func(int, int) uint8 { return 255 }))
	translucent := pngOf(t, nrgba(partial))
	writeBytes(t, filepath.Join(dir, "rgb.png"), opaque)
	writeBytes(t, filepath.Join(dir, "rgba.png"), translucent)
	ffmpeg(t, dir, "-i", "rgb.png", "-pix_fmt", "rgba", "opaque-rgba.png")
	ffmpeg(t, dir, "-i", "rgba.png", "-pix_fmt", "ya8", "ya8.png")

	for _, c := range []struct {
		name, pixFmt string
		in           Input
		want         func(x, y int) float64 // 8-bit scale
		tol          float64                // 0.5: rounded; 0: exact
	}{
		{"rgb", "rgb24", bytesInput(opaque), luma, 0.5},
		{"rgba-partial-alpha", "rgba", bytesInput(translucent), func(x, y int) float64 { return float64(partial(x, y)) }, 0},
		{"rgba-opaque", "rgba", FileInput(filepath.Join(dir, "opaque-rgba.png")), luma, 0.5},
		{"rgba-clear-alpha", "rgba", bytesInput(pngOf(t, nrgba(func(int, int) uint8 { return 0 }))), luma, 0.5},
		// (1: the ffmpeg CLI's own RGBA to grey+alpha, which made the file,
		// is off by a code.)
		{"grey-alpha", "ya8", FileInput(filepath.Join(dir, "ya8.png")), func(x, y int) float64 { return float64(partial(x, y)) }, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			info, err := Probe(context.Background(), c.in, DefaultLimits())
			if err != nil || info.PixelFormat != c.pixFmt {
				t.Fatalf("probe %+v %v, want %s", info, err, c.pixFmt)
			}
			_, g8 := decodeAll(t, c.in, DecodeOptions{Format: frame.Gray8})
			g16 := matteOf(t, c.in, 0, 0)
			for y := 0; y < h; y++ {
				for x := 0; x < w; x++ {
					want := c.want(x, y)
					if got := float64(g8[0].Planes[0][y*g8[0].Strides[0]+x]); !near(got, want, c.tol+1e-3) {
						t.Fatalf("gray8 (%d,%d) = %.0f, want %.1f", x, y, got, want)
					}
					// An 8-bit source's 16-bit matte is its 8-bit one, exactly.
					if got, g := g16[y*w+x], g8[0].Planes[0][y*g8[0].Strides[0]+x]; got != uint16(g)*257 {
						t.Fatalf("gray16 (%d,%d) = %d, want %d*257", x, y, got, g)
					}
				}
			}
		})
	}

	// 16 bits: a grey gradient keeps every one of its 3072 levels, and a
	// reduction keeps far more than 256; a 16-bit alpha is the alpha, an
	// opaque RGB48 its luminance, at 16-bit precision.
	t.Run("gray16", func(t *testing.T) {
		g := image.NewGray16(image.Rect(0, 0, w, h))
		val := func(x, y int) uint16 { return uint16((y*w + x) * 65535 / (w*h - 1)) }
		for y := 0; y < h; y++ {
			for x := 0; x < w; x++ {
				g.SetGray16(x, y, color.Gray16{Y: val(x, y)})
			}
		}
		in := bytesInput(pngOf(t, g))
		got := matteOf(t, in, 0, 0)
		for i, v := range got {
			if want := val(i%w, i/w); v != want {
				t.Fatalf("pixel %d: %d, want %d", i, v, want)
			}
		}
		if n := levels(matteOf(t, in, w/2, h/2)); n <= 256 {
			t.Errorf("a 16-bit gradient reduced to %dx%d has %d levels, want > 256", w/2, h/2, n)
		}
		_, g8 := decodeAll(t, in, DecodeOptions{Format: frame.Gray8})
		for i, v := range g8[0].Planes[0] {
			if want := float64(val(i%w, i/w)) / 257; !near(float64(v), want, 1) {
				t.Fatalf("gray8 pixel %d: %d, want %.1f", i, v, want)
			}
		}
	})
	t.Run("rgba64", func(t *testing.T) {
		m := image.NewNRGBA64(image.Rect(0, 0, w, h))
		alpha := func(x, y int) uint16 { return uint16((y*w + x) * 65535 / (w*h - 1)) }
		for y := 0; y < h; y++ {
			for x := 0; x < w; x++ {
				m.SetNRGBA64(x, y, color.NRGBA64{R: uint16(x * 1000), G: 40000, B: uint16(y * 900), A: alpha(x, y)})
			}
		}
		got := matteOf(t, bytesInput(pngOf(t, m)), 0, 0)
		for i, v := range got {
			if want := float64(alpha(i%w, i/w)); float64(v) != want {
				t.Fatalf("pixel %d: %d, want the alpha %.0f", i, v, want)
			}
		}
		if n := levels(got); n <= 256 {
			t.Errorf("a 16-bit alpha gave %d levels, want > 256", n)
		}
	})
	t.Run("rgb48", func(t *testing.T) {
		m := image.NewNRGBA64(image.Rect(0, 0, w, h))
		c := func(x, y int) (float64, float64, float64) {
			return float64(x * 1000), float64(y * 1300), float64(65535 - x*700)
		}
		for y := 0; y < h; y++ {
			for x := 0; x < w; x++ {
				r, g, b := c(x, y)
				m.SetNRGBA64(x, y, color.NRGBA64{R: uint16(r), G: uint16(g), B: uint16(b), A: 65535})
			}
		}
		in := bytesInput(pngOf(t, m))
		if info, err := Probe(context.Background(), in, DefaultLimits()); err != nil || info.PixelFormat != "rgb48be" {
			t.Fatalf("probe %+v %v", info, err)
		}
		got := matteOf(t, in, 0, 0)
		for i, v := range got {
			// Rounded at 16 bits (8 bits would be 1/256).
			if want := luma709(c(i%w, i/w)); !near(float64(v), want, 0.5+1e-2) {
				t.Fatalf("pixel %d: %d, want the luminance %.0f", i, v, want)
			}
		}
		if n := levels(got); n <= 256 {
			t.Errorf("16-bit colour gave %d levels, want > 256", n)
		}
	})
}

// An RGB video (H.264 4:4:4 RGB, what libx264rgb writes) as a matte gives
// its Rec.709 luminance: pure red is 0.2126, not BT.601's 0.299.
func TestMatteFromRGBVideo(t *testing.T) {
	needFFmpeg(t, "libx264rgb")
	dir := t.TempDir()
	ffmpeg(t, dir, "-f", "lavfi", "-i", "color=c=0xFF0000:s=64x48:r=10", "-frames:v", "2", "-c:v", "libx264rgb", "-qp", "0", "red.mp4")
	in := FileInput(filepath.Join(dir, "red.mp4"))
	info, err := Probe(context.Background(), in, DefaultLimits())
	if err != nil || !pixFmtIsRGBName(info.PixelFormat) {
		t.Fatalf("probe %+v %v: want an RGB pixel format", info, err)
	}
	_, fs := decodeAll(t, in, DecodeOptions{Format: frame.Gray8})
	if len(fs) != 2 {
		t.Fatalf("%d frames", len(fs))
	}
	for _, f := range fs {
		if v := float64(f.Planes[0][100]); !near(v, 0.2126*255, 1) {
			t.Fatalf("red frame's matte %.0f, want %.1f", v, 0.2126*255)
		}
	}
}

func pixFmtIsRGBName(s string) bool {
	switch s {
	case "gbrp", "bgr0", "rgb24", "bgr24":
		return true
	}
	return false
}

// levels counts the distinct values of v.
func levels(v []uint16) int {
	seen := map[uint16]bool{}
	for _, x := range v {
		seen[x] = true
	}
	return len(seen)
}

func writeBytes(t *testing.T, path string, b []byte) {
	t.Helper()
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}
