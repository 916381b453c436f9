package worker

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vfxrender/vfx/job"
)

// ffmpegCLI runs the ffmpeg command line (test set-up).
func ffmpegCLI(t *testing.T, args ...string) {
	t.Helper()
	if out, err := exec.Command("ffmpeg", append([]string{"-v", "error", "-y"}, args...)...).CombinedOutput(); err != nil {
		t.Fatalf("ffmpeg %v: %v\n%s", args, err, out)
	}
}

// readEXR decodes an EXR file with the ffmpeg command line into n planes
// (1: Y; 3: R, G, B; 4: R, G, B, A) of float32.
func readEXR(t *testing.T, path string, n int) [][]float32 {
	t.Helper()
	pf := map[int]string{1: "grayf32le", 3: "gbrpf32le", 4: "gbrapf32le"}[n]
	out, err := exec.Command("ffmpeg", "-v", "error", "-i", path, "-f", "rawvideo", "-pix_fmt", pf, "-").Output()
	if err != nil {
		t.Fatalf("ffmpeg reads %s: %v", path, err)
	}
	px := len(out) / 4 / n
	planes := make([][]float32, n)
	for i := range planes {
		planes[i] = make([]float32, px)
		for k := range px {
			planes[i][k] = math.Float32frombits(binary.LittleEndian.Uint32(out[4*(i*px+k):]))
		}
	}
	if n >= 3 {
		planes[0], planes[1], planes[2] = planes[2], planes[0], planes[1]
	}
	return planes
}

// TestRunEXRPasses renders three frames of real footage (davis bear,
// scaled to 320x180, its hand-made masks as a custom matte) to EXR
// passes, reads every file back with exrheader and FFmpeg, and rebuilds
// the composite from the passes within 1/1000 in linear light.
func TestRunEXRPasses(t *testing.T) {
	if _, err := exec.LookPath("exrheader"); err != nil {
		t.Skip("exrheader not installed (Debian package openexr; make deps installs it)")
	}
	clip, _ := davisClip(t, "bear")
	dir := t.TempDir()
	src, matte := filepath.Join(dir, "src.mp4"), filepath.Join(dir, "matte.mp4")
	ffmpegCLI(t, "-i", clip, "-frames:v", "3", "-vf", "scale=320:180", "-c:v", "libx264", "-crf", "10", "-pix_fmt", "yuv420p", src)
	ffmpegCLI(t, "-framerate", "24", "-i", filepath.Join(filepath.Dir(clip), "masks", "%05d.png"), "-frames:v", "3",
		"-vf", "scale=320:180:flags=area,format=gray", "-c:v", "libx264", "-crf", "4", "-pix_fmt", "yuv420p", matte)
	out := filepath.Join(dir, "out")
	res, err := runReq(newPipeline(), context.Background(), RenderRequest{
		JobRequest: job.JobRequest{GenerationType: "video", AlphaMode: "custom", Prompt: "hard warm key light from the left, sunset beach", Seed: 3, OutputFormat: OutputEXR, Foreground: true},
		Source:     in(src),
		Alpha:      in(matte),
		CRF:        -1,
		Preset:     "ultrafast",
		StartFrame: 1001,
	}, out)
	if err != nil {
		t.Fatal(err)
	}
	if res.EXRFirstFrame != 1001 || res.EXRLastFrame != 1003 || res.Frames != 3 {
		t.Fatalf("frames %d, exr %d..%d; want 3, 1001..1003", res.Frames, res.EXRFirstFrame, res.EXRLastFrame)
	}
	channels := map[string]int{"composite": 3, "foreground": 4, "alpha": 1, "gain": 3, "shadow": 1, "wrap": 3, "backdrop": 3, "normals": 3, "grain": 3}
	// Half floats step by 1/1024 from 1 to 2 (the light wrap lifts some
	// pixels over 1): there the bound is relative.
	var worst, worstRel float64
	var soft, above int
	for f := 1001; f <= 1004; f++ {
		px := map[string][][]float32{}
		for _, pass := range EXRPasses {
			path := filepath.Join(out, pass, fmt.Sprintf("%s.%04d.exr", pass, f))
			if f == 1004 {
				if _, err := os.Stat(path); err == nil {
					t.Errorf("%s exists: 3 frames from 1001 end at 1003", path)
				}
				continue
			}
			hdr, err := exec.Command("exrheader", path).CombinedOutput()
			if err != nil {
				t.Fatalf("exrheader %s: %v\n%s", path, err, hdr)
			}
			for _, want := range []string{"compression (type compression): zip", "red   (0.64 0.33)", "white (0.3127 0.329)",
				"dataWindow (type box2i): (0 0) - (319 179)"} {
				if !strings.Contains(string(hdr), want) {
					t.Errorf("%s: exrheader shows no %q:\n%s", path, want, hdr)
				}
			}
			if got := strings.Count(string(hdr), "16-bit floating-point"); got != channels[pass] || strings.Contains(string(hdr), "32-bit") {
				t.Errorf("%s: %d half-float channels, want %d:\n%s", path, got, channels[pass], hdr)
			}
			px[pass] = readEXR(t, path, channels[pass])
		}
		if f == 1004 {
			break
		}
		c, fg, a, bg, s, w, g := px["composite"], px["foreground"], px["alpha"][0], px["backdrop"], px["shadow"][0], px["wrap"], px["grain"]
		for k := range a {
			if d := math.Abs(float64(fg[3][k] - a[k])); d > 1e-3 {
				t.Fatalf("frame %d: foreground's alpha %v, alpha pass %v", f, fg[3][k], a[k])
			}
			if a[k] > 0.05 && a[k] < 0.95 {
				soft++
			}
			for ch := range 3 {
				rebuilt := g[ch][k] * (fg[ch][k] + (1-a[k])*bg[ch][k]*(1-s[k]) + w[ch][k])
				d := math.Abs(float64(rebuilt - c[ch][k]))
				if c[ch][k] <= 1 {
					worst = max(worst, d)
				} else {
					above++
					worstRel = max(worstRel, d/float64(c[ch][k]))
				}
			}
		}
	}
	t.Logf("composite rebuilt from the half-float passes within %.2e (linear, values <= 1), %.2e relative over 1 (%d values); %d soft alpha pixels",
		worst, worstRel, above, soft)
	if worst > 1e-3 {
		t.Errorf("the passes rebuild the composite within %.2e where it is <= 1, want 1e-3", worst)
	}
	if worstRel > 1.5e-3 { // three half roundings of 2^-11 relative each
		t.Errorf("the passes rebuild the composite within %.2e of its value where it is > 1, want 1.5e-3", worstRel)
	}
	if soft == 0 {
		t.Error("no soft alpha: the rebuild is not tested where the terms mix")
	}
}
