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

	m, err := Check(context.Background(), Inputs{GenerationType: "image", AlphaMode: "select", Source: src, Alpha: key, Reference: src}, codec.DefaultLimits())
	if err != nil || !m.HaveSource || !m.HaveAlpha || !m.HaveReference || m.Frames() != 1 {
		t.Fatalf("valid inputs: %+v, %v", m, err)
	}
	if m, err := Check(context.Background(), Inputs{GenerationType: "image", AlphaMode: "fill"}, codec.DefaultLimits()); err != nil || m.Frames() != 0 {
		t.Fatalf("nothing at hand: %+v, %v", m, err)
	}
	cases := []struct {
		name string
		in   Inputs
		code job.Code
		msg  string
	}{
		{"mode", Inputs{GenerationType: "image", AlphaMode: "magic"}, job.CodeInvalidAlphaMode, "magic"},
		{"not media", Inputs{GenerationType: "image", AlphaMode: "fill", Source: &notImage}, job.CodeInvalidFileFormat, "source"},
		{"kind", Inputs{GenerationType: "video", AlphaMode: "fill", Source: src}, job.CodeInvalidFileFormat, "needs an MP4 or MOV"},
		{"custom size", Inputs{GenerationType: "image", AlphaMode: "custom", Source: src, Alpha: key}, job.CodeAlphaTypeMismatch, "64x48, matte is 32x24"},
		{"colour keyframe", Inputs{GenerationType: "image", AlphaMode: "select", Source: src, Alpha: src}, job.CodeAlphaTypeMismatch, "grayscale"},
		{"keyframe aspect", Inputs{GenerationType: "image", AlphaMode: "select", Source: src, Alpha: odd}, job.CodeAlphaTypeMismatch, "aspect ratio"},
		{"reference", Inputs{GenerationType: "image", AlphaMode: "fill", Reference: &notImage}, job.CodeInvalidFileFormat, "reference"},
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
