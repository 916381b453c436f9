package worker

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/vfxrender/vfx/codec"
	"github.com/vfxrender/vfx/frame"
	"github.com/vfxrender/vfx/job"
	"github.com/vfxrender/vfx/kernels"
)

func TestUpscaleSize(t *testing.T) {
	for _, c := range []struct{ w, h, short, even, ww, wh int }{
		{1920, 1080, 2160, 1, 3840, 2160},
		{1080, 1920, 2160, 1, 2160, 3840},
		{1920, 1080, 1080, 1, 1920, 1080}, // already there: kept
		{1280, 720, 1080, 1, 1920, 1080},
		{64, 48, 1080, 1, 1440, 1080},
		{100, 33, 1081, 1, 3276, 1082}, // even sides for video
		{100, 33, 1081, 0, 3276, 1081},
		{2000, 1100, 1080, 1, 2000, 1100}, // never downscaled
	} {
		w, h := upscaleSize(c.w, c.h, c.short, c.even == 1)
		if w != c.ww || h != c.wh {
			t.Errorf("%dx%d to %d: %dx%d, want %dx%d", c.w, c.h, c.short, w, h, c.ww, c.wh)
		}
	}
	if FastShortSide(1080) != 720 || FastShortSide(720) != 480 || FastShortSide(180) != 120 || FastShortSide(1) != 2 {
		t.Errorf("fast sizes: %d %d %d", FastShortSide(1080), FastShortSide(720), FastShortSide(180))
	}
}

// TestUpscaleVideo upscales a real H.264 render with audio: every frame
// is kept (same count, decodable), the size follows the shorter side and
// the audio is copied.
func TestUpscaleVideo(t *testing.T) {
	fx := fixture(t, 64, 48, 12)
	src := fx.Source
	audio := false
	if ff, err := exec.LookPath("ffmpeg"); err == nil {
		src = filepath.Join(t.TempDir(), "with_audio.mp4")
		cmd := exec.Command(ff, "-hide_banner", "-loglevel", "error", "-i", fx.Source, "-f", "lavfi", "-i", "sine=frequency=440:duration=1",
			"-c:v", "copy", "-c:a", "aac", "-shortest", src)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("ffmpeg: %v: %s", err, out)
		}
		audio = true
	} else {
		t.Log("ffmpeg command line not installed: audio passthrough not checked here")
	}
	out := filepath.Join(t.TempDir(), "up.mp4")
	calls := 0
	res, err := Upscale(context.Background(), kernels.NewCPU(2), codec.FileInput(src), out,
		UpscaleOptions{ShortSide: 1080, Preset: "ultrafast", Progress: func(done, total int) { calls++ }})
	if err != nil {
		t.Fatal(err)
	}
	if res.Frames != 12 || res.Width != 1440 || res.Height != 1080 || calls != 12 {
		t.Fatalf("result %+v, %d progress calls", res, calls)
	}
	info, frames := decodeAll(t, out, frame.YUV420P)
	if len(frames) != 12 || info.DisplayWidth != 1440 || info.DisplayHeight != 1080 {
		t.Fatalf("decoded %d frames of %dx%d", len(frames), info.DisplayWidth, info.DisplayHeight)
	}
	if audio && (!info.HasAudio || info.AudioCodec != "aac") {
		t.Fatalf("audio not passed through: %+v", info)
	}
	// The picture is the source's, larger: the mean luma agrees.
	_, small := decodeAll(t, src, frame.YUV420P)
	mean := func(f *frame.HostFrame) float64 {
		s := 0.0
		for y := range f.Height {
			for x := range f.Width {
				s += float64(f.Planes[0][y*f.Strides[0]+x])
			}
		}
		return s / float64(f.Width*f.Height)
	}
	if a, b := mean(small[5]), mean(frames[5]); a-b > 3 || b-a > 3 {
		t.Fatalf("mean luma %v vs %v", a, b)
	}
}

func TestUpscaleImageAndErrors(t *testing.T) {
	fx := fixture(t, 64, 48, 2)
	out := filepath.Join(t.TempDir(), "up.png")
	res, err := Upscale(context.Background(), kernels.NewCPU(2), codec.FileInput(fx.Still), out, UpscaleOptions{ShortSide: 2160})
	if err != nil {
		t.Fatal(err)
	}
	info, err := codec.Probe(context.Background(), codec.FileInput(out), codec.Limits{MaxPixels: 10_000_000, MaxFrames: 1, MaxAspect: 4})
	if err != nil || res.Frames != 1 || info.DisplayWidth != 2880 || info.DisplayHeight != 2160 || info.Kind != codec.KindImage {
		t.Fatalf("image: %+v %+v %v", res, info, err)
	}
	junk := filepath.Join(t.TempDir(), "junk.mp4")
	if err := os.WriteFile(junk, []byte("not a video at all"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = Upscale(context.Background(), kernels.NewCPU(1), codec.FileInput(junk), filepath.Join(t.TempDir(), "o.mp4"), UpscaleOptions{ShortSide: 1080})
	var ie *job.InputError
	if !errors.As(err, &ie) || ie.Code != "INVALID_FILE_FORMAT" {
		t.Fatalf("junk input: %v", err)
	}
}
