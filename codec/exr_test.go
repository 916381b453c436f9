package codec

import (
	"context"
	"encoding/binary"
	"math"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/asticode/go-astiav"
)

// readEXRByFFmpeg decodes an EXR file with the ffmpeg command line into
// planar float32 R, G, B (and A when alpha is set), or one Y plane.
func readEXRByFFmpeg(t *testing.T, path string, channels int) [][]float32 {
	t.Helper()
	pf := map[int]string{1: "grayf32le", 3: "gbrpf32le", 4: "gbrapf32le"}[channels]
	out, err := exec.Command("ffmpeg", "-v", "error", "-i", path, "-f", "rawvideo", "-pix_fmt", pf, "-").Output()
	if err != nil {
		t.Fatalf("ffmpeg %s: %v", path, err)
	}
	n := len(out) / 4 / channels
	planes := make([][]float32, channels)
	for i := range planes {
		planes[i] = make([]float32, n)
		for k := range n {
			planes[i][k] = math.Float32frombits(binary.LittleEndian.Uint32(out[4*(i*n+k):]))
		}
	}
	if channels >= 3 { // g, b, r(, a) → r, g, b(, a)
		planes[0], planes[1], planes[2] = planes[2], planes[0], planes[1]
	}
	return planes
}

// TestWriteEXR: 1, 3 and 4-channel files that exrheader reads as
// half-float, ZIP-compressed, with the chromaticities given, and whose
// values FFmpeg reads back within half-float rounding.
func TestWriteEXR(t *testing.T) {
	if _, err := exec.LookPath("exrheader"); err != nil {
		t.Skip("exrheader not installed (Debian package openexr; make deps installs it)")
	}
	const w, h = 37, 21 // 21 rows: two ZIP chunks, the last one short
	dir := t.TempDir()
	for _, n := range []int{1, 3, 4} {
		chans := make([][]float32, n)
		for c := range chans {
			chans[c] = make([]float32, w*h)
			for k := range chans[c] {
				chans[c][k] = float32(k%w)/float32(w) + float32(c)*0.25 + float32(k/w)*0.01
			}
		}
		path := filepath.Join(dir, "x.exr")
		cs := ACEScgChromaticities
		if n != 3 {
			cs = Rec709Chromaticities
		}
		if err := WriteEXR(context.Background(), path, EXRImage{Width: w, Height: h, Channels: chans, Chromaticities: cs}); err != nil {
			t.Fatal(err)
		}
		hdr, err := exec.Command("exrheader", path).CombinedOutput()
		if err != nil {
			t.Fatalf("%d channels: exrheader: %v\n%s", n, err, hdr)
		}
		want := []string{"16-bit floating-point", "compression (type compression): zip, multi-scanline blocks",
			"dataWindow (type box2i): (0 0) - (36 20)", "chromaticities (type chromaticities)"}
		if n == 3 {
			want = append(want, "red   (0.713 0.293)", "white (0.32168 0.33767)")
		} else {
			want = append(want, "red   (0.64 0.33)", "white (0.3127 0.329)")
		}
		for _, s := range want {
			if !strings.Contains(string(hdr), s) {
				t.Errorf("%d channels: exrheader shows no %q:\n%s", n, s, hdr)
			}
		}
		if strings.Contains(string(hdr), "32-bit floating-point") {
			t.Errorf("%d channels: a 32-bit channel:\n%s", n, hdr)
		}
		got := readEXRByFFmpeg(t, path, n)
		for c := range chans {
			for k, v := range chans[c] {
				if d := math.Abs(float64(got[c][k] - v)); d > float64(v)/1024+1e-6 {
					t.Fatalf("%d channels: channel %d pixel %d: read %v, wrote %v", n, c, k, got[c][k], v)
				}
			}
		}
	}
}

// TestLogWarnings: FFmpeg's warnings reach the sink, its info lines do
// not.
func TestLogWarnings(t *testing.T) {
	var got []string
	LogWarnings(func(level, msg string) { got = append(got, level+": "+msg) })
	defer func() {
		astiav.ResetLogCallback()
		Quiet()
	}()
	astiav.Log(nil, astiav.LogLevelInfo, "an info line %s\n", "x")
	astiav.Log(nil, astiav.LogLevelWarning, "a warning %s\n", "y")
	astiav.Log(nil, astiav.LogLevelError, "an error %s\n", "z")
	if strings.Join(got, "|") != "warning: a warning y|error: an error z" {
		t.Errorf("sink got %q", got)
	}
}
