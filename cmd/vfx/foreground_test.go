package main

import (
	"context"
	"errors"
	"io"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vfxrender/vfx/bench"
	"github.com/vfxrender/vfx/codec"
	"github.com/vfxrender/vfx/frame"
)

// decodeMatte returns every frame of a job's alpha output as it was used
// (the matte decoder of the pipeline), rows packed.
func decodeMatte(t *testing.T, path string) []byte {
	t.Helper()
	ctx := context.Background()
	dec, err := codec.NewDecoder(ctx, codec.FileInput(path), codec.Limits{}, codec.DecodeOptions{Format: frame.Gray8})
	if err != nil {
		t.Fatal(err)
	}
	defer dec.Close()
	var out []byte
	f := &frame.HostFrame{}
	for {
		err := dec.Next(ctx, f)
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		for y := range f.Height {
			out = append(out, f.Planes[0][y*f.Strides[0]:y*f.Strides[0]+f.Width]...)
		}
	}
}

// alphaByFFmpeg reads the alpha plane of a file with the ffmpeg command
// line as 8-bit grey.
func alphaByFFmpeg(t *testing.T, path string) []byte {
	t.Helper()
	out, err := exec.Command("ffmpeg", "-v", "error", "-i", path, "-vf", "alphaextract,format=gray", "-f", "rawvideo", "-").Output()
	if err != nil {
		t.Fatalf("ffmpeg alphaextract %s: %v", path, err)
	}
	return out
}

// TestRenderForeground: `vfx render --foreground` writes a ProRes 4444
// .mov (video) and an RGBA PNG (image) whose alpha, read back with ffmpeg,
// equals the job's alpha output within one code value.
func TestRenderForeground(t *testing.T) {
	dir := t.TempDir()
	fx, err := bench.WriteFixture(context.Background(), filepath.Join(dir, "in"), bench.FixtureOptions{Width: 96, Height: 64, Frames: 4})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		typ, src, matte, fg, alpha, codecName string
	}{
		{"video", fx.Source, fx.Matte, "foreground.mov", "alpha.mp4", "prores"},
		{"image", fx.Still, fx.StillMatte, "foreground.png", "alpha.png", "png"},
	}
	for _, c := range cases {
		out := filepath.Join(dir, "out-"+c.typ)
		code, stdout, stderr := runCLI("render", "--type", c.typ, "--source", c.src, "--alpha-mode", "custom", "--alpha", c.matte,
			"--prompt", "warm key light", "--seed", "3", "--preset", "ultrafast", "--foreground", "--out", out)
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", c.typ, code, stderr)
		}
		fg := filepath.Join(out, c.fg)
		if !strings.Contains(stdout, fg) {
			t.Errorf("%s: summary does not name %s: %q", c.typ, fg, stdout)
		}
		probe, err := exec.Command("ffprobe", "-v", "error", "-select_streams", "v:0", "-show_entries",
			"stream=codec_name,pix_fmt,width,height", "-of", "default=nw=1", fg).Output()
		if err != nil {
			t.Fatalf("%s: ffprobe: %v", c.typ, err)
		}
		if !strings.Contains(string(probe), "codec_name="+c.codecName) || !strings.Contains(string(probe), "width=96") ||
			(c.typ == "video" && !strings.Contains(string(probe), "pix_fmt=yuva444p")) || (c.typ == "image" && !strings.Contains(string(probe), "pix_fmt=rgba")) {
			t.Errorf("%s: ffprobe:\n%s", c.typ, probe)
		}
		if c.typ == "video" {
			checkBT709Tags(t, map[string]string{"render.mp4": "tv", "source.mp4": "tv", "alpha.mp4": "pc", c.fg: "tv"}, out)
		}
		got, want := alphaByFFmpeg(t, fg), decodeMatte(t, filepath.Join(out, c.alpha))
		if len(got) != len(want) || len(want) == 0 {
			t.Fatalf("%s: %d alpha bytes from the foreground, %d from the job's alpha", c.typ, len(got), len(want))
		}
		worst, partial := 0, 0
		for i := range got {
			worst = max(worst, int(got[i])-int(want[i]), int(want[i])-int(got[i]))
			if want[i] > 0 && want[i] < 255 {
				partial++
			}
		}
		if worst > 1 {
			t.Errorf("%s: foreground alpha differs from the job's alpha by up to %d code values", c.typ, worst)
		}
		if partial == 0 && !strings.Contains(string(want), "\x00") {
			t.Errorf("%s: the matte is flat; the check proves nothing", c.typ)
		}
	}
}

// checkBT709Tags asserts that ffprobe shows BT.709 primaries, transfer and
// matrix, and the given range ("tv" or "pc"), on each named video in dir.
func checkBT709Tags(t *testing.T, ranges map[string]string, dir string) {
	t.Helper()
	for name, rng := range ranges {
		probe, err := exec.Command("ffprobe", "-v", "error", "-select_streams", "v:0", "-show_entries",
			"stream=color_primaries,color_transfer,color_space,color_range", "-of", "default=nw=1", filepath.Join(dir, name)).Output()
		if err != nil {
			t.Fatalf("ffprobe %s: %v", name, err)
		}
		for _, want := range []string{"color_primaries=bt709", "color_transfer=bt709", "color_space=bt709", "color_range=" + rng} {
			if !strings.Contains(string(probe), want) {
				t.Errorf("%s: ffprobe shows no %s:\n%s", name, want, probe)
			}
		}
	}
}
