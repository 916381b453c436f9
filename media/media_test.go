package media

import (
	"context"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vfxrender/vfx/codec"
	"github.com/vfxrender/vfx/job"
	"github.com/vfxrender/vfx/store"
)

func writePNG(t *testing.T, path string, w, h int, gray bool) *codec.Input {
	t.Helper()
	var img image.Image
	if gray {
		g := image.NewGray(image.Rect(0, 0, w, h))
		g.SetGray(1, 1, color.Gray{Y: 255})
		img = g
	} else {
		img = image.NewRGBA(image.Rect(0, 0, w, h))
	}
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := png.Encode(f, img); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	in := codec.FileInput(path)
	return &in
}

func TestCheck(t *testing.T) {
	dir := t.TempDir()
	src := writePNG(t, filepath.Join(dir, "src.png"), 64, 48, false)
	key := writePNG(t, filepath.Join(dir, "key.png"), 32, 24, true)
	odd := writePNG(t, filepath.Join(dir, "odd.png"), 48, 48, true)
	text := filepath.Join(dir, "notes.png")
	if err := os.WriteFile(text, []byte("not an image\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	notImage := codec.FileInput(text)

	m, err := Check(context.Background(), Inputs{JobRequest: job.JobRequest{GenerationType: "image", AlphaMode: "select"}, Source: src, Alpha: key, Reference: src}, codec.DefaultLimits())
	if err != nil || !m.HaveSource || !m.HaveAlpha || !m.HaveReference || m.Frames() != 1 {
		t.Fatalf("valid inputs: %+v, %v", m, err)
	}
	if m, err := Check(context.Background(), Inputs{JobRequest: job.JobRequest{GenerationType: "image", AlphaMode: "fill"}}, codec.DefaultLimits()); err != nil || m.Frames() != 0 {
		t.Fatalf("nothing at hand: %+v, %v", m, err)
	}
	cases := []struct {
		name string
		in   Inputs
		code job.Code
		msg  string
	}{
		{"mode", Inputs{JobRequest: job.JobRequest{GenerationType: "image", AlphaMode: "magic"}}, job.CodeInvalidAlphaMode, "magic"},
		{"not media", Inputs{JobRequest: job.JobRequest{GenerationType: "image", AlphaMode: "fill"}, Source: &notImage}, job.CodeInvalidFileFormat, "source"},
		{"kind", Inputs{JobRequest: job.JobRequest{GenerationType: "video", AlphaMode: "fill"}, Source: src}, job.CodeInvalidFileFormat, "needs an MP4 or MOV"},
		{"custom size", Inputs{JobRequest: job.JobRequest{GenerationType: "image", AlphaMode: "custom"}, Source: src, Alpha: key}, job.CodeAlphaTypeMismatch, "64x48, matte is 32x24"},
		{"empty keyframe", Inputs{JobRequest: job.JobRequest{GenerationType: "image", AlphaMode: "select"}, Source: src, Alpha: src}, job.CodeAlphaTypeMismatch, "selects nothing"},
		{"keyframe format", Inputs{JobRequest: job.JobRequest{GenerationType: "image", AlphaMode: "select"}, Source: src, Alpha: &notImage}, job.CodeInvalidFileFormat, "alpha"},
		{"keyframe aspect", Inputs{JobRequest: job.JobRequest{GenerationType: "image", AlphaMode: "select"}, Source: src, Alpha: odd}, job.CodeAlphaTypeMismatch, "aspect ratio"},
		{"reference", Inputs{JobRequest: job.JobRequest{GenerationType: "image", AlphaMode: "fill"}, Reference: &notImage}, job.CodeInvalidFileFormat, "reference"},
		// The matte's and the reference's probes run beside the source's;
		// the first problem in the rules' order is the one reported.
		{"source before the others", Inputs{JobRequest: job.JobRequest{GenerationType: "image", AlphaMode: "custom"}, Source: &notImage, Alpha: &notImage, Reference: &notImage}, job.CodeInvalidFileFormat, "source"},
		{"matte before the reference", Inputs{JobRequest: job.JobRequest{GenerationType: "image", AlphaMode: "custom"}, Source: src, Alpha: &notImage, Reference: &notImage}, job.CodeInvalidFileFormat, "alpha"},
		{"reference after a good matte", Inputs{JobRequest: job.JobRequest{GenerationType: "image", AlphaMode: "custom"}, Source: src, Alpha: src, Reference: &notImage}, job.CodeInvalidFileFormat, "reference"},
	}
	for _, c := range cases {
		_, err := Check(context.Background(), c.in, codec.DefaultLimits())
		if job.CodeOf(err) != c.code || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%s: %v, want %s mentioning %q", c.name, err, c.code, c.msg)
		}
	}
}

func TestAsInputError(t *testing.T) {
	for _, c := range []struct {
		err  error
		code job.Code
	}{
		{fmt.Errorf("probe: %w", codec.ErrTooManyFrames), job.CodeVideoTooManyFrames},
		{fmt.Errorf("probe: %w", codec.ErrCorrupt), job.CodeInvalidFileFormat},
		{fmt.Errorf("open: %w", store.ErrNotFound), job.CodeSourceUnreachable},
		{fmt.Errorf("open: %w", store.ErrForbiddenAddress), job.CodeInvalidURI},
		{fmt.Errorf("rule: %w", job.ErrKeyframeIndex), job.CodeInvalidKeyframeIndex},
		{errors.New("disk full"), ""},
	} {
		err := AsInputError("source", c.err)
		if job.CodeOf(err) != c.code || !errors.Is(err, c.err) {
			t.Errorf("%v: %v (code %q), want %q", c.err, err, job.CodeOf(err), c.code)
		}
		if c.code != "" && !strings.HasPrefix(err.Error(), string(c.code)+": source: ") {
			t.Errorf("%v: text %q", c.err, err)
		}
	}
	if AsInputError("x", nil) != nil {
		t.Error("nil error")
	}
}

// encodePNG writes m as a PNG in dir and returns it as an input.
func encodePNG(t *testing.T, dir, name string, m image.Image) *codec.Input {
	t.Helper()
	path := filepath.Join(dir, name)
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
	in := codec.FileInput(path)
	return &in
}

// Select keyframes as roto tools export them are taken (RGB, RGBA, 16-bit;
// a single pixel at the smallest 16-bit value is something), and one whose
// alpha and colour are both empty is refused with ALPHA_TYPE_MISMATCH and a
// message that says so.
func TestKeyframeFormatsAndEmpty(t *testing.T) {
	const w, h = 32, 24
	dir := t.TempDir()
	src := encodePNG(t, dir, "src.png", image.NewGray(image.Rect(0, 0, w, h)))
	r := image.Rect(0, 0, w, h)
	nrgba := func(c func(x, y int) color.NRGBA) *image.NRGBA {
		m := image.NewNRGBA(r)
		for y := 0; y < h; y++ {
			for x := 0; x < w; x++ {
				m.SetNRGBA(x, y, c(x, y))
			}
		}
		return m
	}
	inside := func(x, y int) bool { return x > 8 && x < 24 && y > 6 && y < 18 }
	whiteOn := func(x, y int) color.NRGBA {
		if inside(x, y) {
			return color.NRGBA{255, 255, 255, 255}
		}
		return color.NRGBA{0, 0, 0, 255}
	}
	cutOut := func(x, y int) color.NRGBA { // a roto export: colour everywhere, the subject in the alpha
		a := uint8(0)
		if inside(x, y) {
			a = 255
		}
		return color.NRGBA{200, 40, 90, a}
	}
	tiny := image.NewGray16(r)
	tiny.SetGray16(5, 5, color.Gray16{Y: 1})
	g16 := image.NewGray16(r)
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			g16.SetGray16(x, y, color.Gray16{Y: uint16(x * 2000)})
		}
	}
	clearColour := nrgba(func(x, y int) color.NRGBA { c := whiteOn(x, y); c.A = 0; return c })
	for i, c := range []struct {
		name  string
		m     image.Image
		empty string // "" = accepted, else the message
	}{
		{"rgb", nrgba(whiteOn), ""},
		{"rgba cut-out", nrgba(cutOut), ""},
		{"rgba clear alpha, colour", clearColour, ""},
		{"gray16", g16, ""},
		{"gray16 one pixel at 1/65535", tiny, ""},
		{"black gray", image.NewGray(r), "black everywhere"},
		{"black gray16", image.NewGray16(r), "black everywhere"},
		{"black rgb", nrgba(func(int, int) color.NRGBA { return color.NRGBA{0, 0, 0, 255} }), "black everywhere"},
		{"clear black rgba", image.NewNRGBA(r), "alpha channel is fully transparent"},
		{"clear black rgba64", image.NewNRGBA64(r), "alpha channel is fully transparent"},
	} {
		key := encodePNG(t, dir, fmt.Sprintf("key%d.png", i), c.m)
		_, err := Check(context.Background(), Inputs{JobRequest: job.JobRequest{GenerationType: "image", AlphaMode: "select"}, Source: src, Alpha: key}, codec.DefaultLimits())
		if c.empty == "" {
			if err != nil {
				t.Errorf("%s: %v", c.name, err)
			}
			continue
		}
		if job.CodeOf(err) != job.CodeAlphaTypeMismatch || !errors.Is(err, job.ErrKeyframeEmpty) || !strings.Contains(err.Error(), c.empty) {
			t.Errorf("%s: %v, want ALPHA_TYPE_MISMATCH saying %q", c.name, err, c.empty)
		}
		// A custom matte may be empty (the whole frame is replaced).
		if _, err := Check(context.Background(), Inputs{JobRequest: job.JobRequest{GenerationType: "image", AlphaMode: "custom"}, Source: src, Alpha: key}, codec.DefaultLimits()); err != nil {
			t.Errorf("%s as a custom matte: %v", c.name, err)
		}
	}
}
