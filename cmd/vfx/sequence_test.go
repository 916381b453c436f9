package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vfxrender/vfx/bench"
	"github.com/vfxrender/vfx/codec"
	"github.com/vfxrender/vfx/frame"
)

// decodeFrames returns the frames of a file decoded as format.
func decodeFrames(t *testing.T, path string, format frame.PixelFormat) []*frame.HostFrame {
	t.Helper()
	ctx := context.Background()
	dec, err := codec.NewDecoder(ctx, codec.FileInput(path), codec.Limits{}, codec.DecodeOptions{Format: format})
	if err != nil {
		t.Fatal(err)
	}
	defer dec.Close()
	var out []*frame.HostFrame
	for {
		f := &frame.HostFrame{}
		err := dec.Next(ctx, f)
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, f)
	}
}

// TestRenderSequences: a PNG-16 sequence (a printf pattern), a folder of
// linear EXR frames and the same frames in the MP4 they came from give
// the same render within 8-bit rounding; --fps sets the frame rate.
func TestRenderSequences(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	fx, err := bench.WriteFixture(ctx, filepath.Join(dir, "in"), bench.FixtureOptions{Width: 96, Height: 64, Frames: 4})
	if err != nil {
		t.Fatal(err)
	}
	png16 := filepath.Join(dir, "png16")
	exrDir := filepath.Join(dir, "exr")
	for _, d := range []string{png16, exrDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if out, err := exec.Command("ffmpeg", "-v", "error", "-i", fx.Source, "-pix_fmt", "rgb48be", filepath.Join(png16, "shot.%04d.png")).CombinedOutput(); err != nil {
		t.Fatalf("ffmpeg: %v\n%s", err, out)
	}
	// The EXR frames: the MP4's frames as the pipeline decodes them, in
	// linear light (the sRGB curve undone), as half floats.
	for i, f := range decodeFrames(t, fx.Source, frame.RGB24) {
		n := f.Width * f.Height
		chans := [][]float32{make([]float32, n), make([]float32, n), make([]float32, n)}
		for y := range f.Height {
			for x := range f.Width {
				for c := range 3 {
					v := float64(f.Planes[0][y*f.Strides[0]+3*x+c]) / 255
					if v <= 0.04045 {
						v /= 12.92
					} else {
						v = math.Pow((v+0.055)/1.055, 2.4)
					}
					chans[c][y*f.Width+x] = float32(v)
				}
			}
		}
		if err := codec.WriteEXR(ctx, filepath.Join(exrDir, fmt.Sprintf("plate.%04d.exr", 1001+i)), codec.EXRImage{Width: f.Width, Height: f.Height,
			Channels: chans, Chromaticities: codec.Rec709Chromaticities}); err != nil {
			t.Fatal(err)
		}
	}
	renders := map[string][]*frame.HostFrame{}
	for name, src := range map[string]string{"mp4": fx.Source, "png16": filepath.Join(png16, "shot.%04d.png"), "exr": exrDir} {
		out := filepath.Join(dir, "out-"+name)
		code, stdout, stderr := runCLI("render", "--type", "video", "--source", src, "--alpha-mode", "custom", "--alpha", fx.Matte,
			"--prompt", "warm key light from the left", "--seed", "3", "--preset", "ultrafast", "--x264-params", "qp=0", "--fps", "25", "--out", out)
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", name, code, stderr)
		}
		if name != "mp4" && !strings.Contains(stdout, "sequence: source") {
			t.Errorf("%s: no sequence line: %q", name, stdout)
		}
		probe, err := exec.Command("ffprobe", "-v", "error", "-select_streams", "v:0", "-show_entries", "stream=r_frame_rate,nb_frames", "-of", "csv=p=0", filepath.Join(out, "render.mp4")).Output()
		if err != nil || strings.TrimSpace(string(probe)) != "25/1,4" {
			t.Errorf("%s: render.mp4 frame rate and count %q (%v), want 25/1,4", name, probe, err)
		}
		renders[name] = decodeFrames(t, filepath.Join(out, "render.mp4"), frame.RGB24)
	}
	for _, name := range []string{"png16", "exr"} {
		got, want := renders[name], renders["mp4"]
		if len(got) != len(want) {
			t.Fatalf("%s: %d frames, mp4 %d", name, len(got), len(want))
		}
		worst, sum, count, over2 := 0, 0, 0, 0
		for i := range want {
			for k, v := range want[i].Planes[0] {
				d := int(got[i].Planes[0][k]) - int(v)
				d = max(d, -d)
				worst, sum, count = max(worst, d), sum+d, count+1
				if d > 2 {
					over2++
				}
			}
		}
		mean, share := float64(sum)/float64(count), float64(over2)/float64(count)
		t.Logf("%s against mp4: mean %.3f, max %d code values, %.3f%% over 2", name, mean, worst, 100*share)
		// The frames pass through RGB: the MP4's 4:2:0 chroma, upsampled
		// and subsampled again, moves a few values at sharp colour edges.
		if mean > 0.25 || share > 0.01 || worst > 12 {
			t.Errorf("%s: the render differs from the mp4's by %.3f on average, %d at most, %.3f%% over 2 (want mean <= 0.25, max <= 12, <= 1%% over 2)",
				name, mean, worst, 100*share)
		}
	}
}

// TestRenderFramesPreview: --frames 2-4 --preview renders three frames at
// half the output size; a bad range is a usage error.
func TestRenderFramesPreview(t *testing.T) {
	dir := t.TempDir()
	fx, err := bench.WriteFixture(context.Background(), filepath.Join(dir, "in"), bench.FixtureOptions{Width: 192, Height: 108, Frames: 8})
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	code, stdout, stderr := runCLI("render", "--type", "video", "--source", fx.Source, "--alpha-mode", "custom", "--alpha", fx.Matte,
		"--prompt", "warm key light", "--seed", "3", "--frames", "2-4", "--preview", "--out", out)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.Contains(stdout, "rendered 3 frame(s) 96x54") {
		t.Errorf("summary %q: want 3 frames at 96x54", stdout)
	}
	for _, name := range []string{"render.mp4", "alpha.mp4", "source.mp4"} {
		probe, err := exec.Command("ffprobe", "-v", "error", "-select_streams", "v:0", "-show_entries", "stream=width,height,nb_frames", "-of", "csv=p=0", filepath.Join(out, name)).Output()
		if err != nil || strings.TrimSpace(string(probe)) != "96,54,3" {
			t.Errorf("%s: %q (%v), want 96,54,3", name, probe, err)
		}
	}
	// The trimmed matte is the source's frames 2..4: its first frame is
	// the full matte's third.
	full, cut := decodeFrames(t, fx.Matte, frame.Gray8), decodeFrames(t, filepath.Join(out, "alpha.mp4"), frame.Gray8)
	if len(cut) != 3 || len(full) != 8 {
		t.Fatalf("%d and %d matte frames", len(cut), len(full))
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--frames", "5-2"}, "--frames \"5-2\""},
		{[]string{"--frames", "6-9"}, "the source has 8 frames"},
	} {
		args := append([]string{"render", "--type", "video", "--source", fx.Source, "--alpha-mode", "custom", "--alpha", fx.Matte,
			"--prompt", "x", "--out", filepath.Join(dir, "bad")}, c.args...)
		code, _, stderr := runCLI(args...)
		if code == 0 || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: exit %d, %q; want an error naming %q", c.args, code, stderr, c.want)
		}
	}
}

// TestRenderBadInputBeforeModel: in auto and select a bad source is
// refused before the segmentation network is looked for (an empty model
// folder would give MODEL_UNAVAILABLE after it).
func TestRenderBadInputBeforeModel(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.mp4")
	if err := os.WriteFile(bad, []byte(strings.Repeat("not a video ", 400)), 0o644); err != nil {
		t.Fatal(err)
	}
	mask := filepath.Join(dir, "mask.png")
	if out, err := exec.Command("ffmpeg", "-v", "error", "-f", "lavfi", "-i", "color=white:s=64x64", "-frames:v", "1", mask).CombinedOutput(); err != nil {
		t.Fatalf("ffmpeg: %v %s", err, out)
	}
	for _, mode := range []string{"auto", "select", "fill", "custom"} {
		code, _, stderr := runCLI("render", "--type", "video", "--source", bad, "--alpha-mode", mode, "--alpha", mask,
			"--prompt", "x", "--model-dir", filepath.Join(dir, "no-models"), "--out", filepath.Join(dir, "out"))
		if code != 1 || !strings.Contains(stderr, "INVALID_FILE_FORMAT") {
			t.Errorf("%s: exit %d, %q; want INVALID_FILE_FORMAT before the model", mode, code, stderr)
		}
	}
}
