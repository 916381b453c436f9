package codec

import (
	"bytes"
	"context"
	"image"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vfxrender/vfx/frame"
)

// fgFrames makes a colour frame and a matte with every alpha value 0..255
// (a ramp along x, shifted per frame).
func fgFrames(t *testing.T, format frame.PixelFormat, w, h, i int) (*frame.HostFrame, *frame.HostFrame) {
	t.Helper()
	col, err := frame.New(format, w, h)
	if err != nil {
		t.Fatal(err)
	}
	a, err := frame.New(frame.Gray8, w, h)
	if err != nil {
		t.Fatal(err)
	}
	for p := range col.Planes {
		for k := range col.Planes[p] {
			col.Planes[p][k] = uint8(40 + (k*7+p*50)%180)
		}
	}
	for y := range h {
		for x := range w {
			a.Planes[0][y*a.Strides[0]+x] = uint8((x + y*w + i*13) % 256)
		}
	}
	col.PTS, a.PTS = int64(i), int64(i)
	col.ColorSpace = frame.BT709
	return col, a
}

// ffmpegAlpha decodes the alpha plane of a file with the ffmpeg command
// line, as 8-bit grey, frame after frame.
func ffmpegAlpha(t *testing.T, path string) []byte {
	t.Helper()
	out, err := exec.Command("ffmpeg", "-v", "error", "-i", path, "-vf", "alphaextract,format=gray", "-f", "rawvideo", "-").Output()
	if err != nil {
		t.Fatalf("ffmpeg alphaextract %s: %v", path, err)
	}
	return out
}

func maxDiff(t *testing.T, got, want []byte) int {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d alpha bytes, want %d", len(got), len(want))
	}
	d := 0
	for i := range got {
		d = max(d, int(got[i])-int(want[i]), int(want[i])-int(got[i]))
	}
	return d
}

// TestForegroundProRes: a ProRes 4444 .mov whose alpha, read back by
// ffmpeg, equals the matte within one code value, and whose colour is
// premultiplied (zero alpha gives black).
func TestForegroundProRes(t *testing.T) {
	ctx := context.Background()
	const w, h, n = 64, 32, 3
	path := filepath.Join(t.TempDir(), "foreground.mov")
	enc, err := NewForegroundEncoder(ctx, path, ForegroundOptions{Video: true, Width: w, Height: h, FrameRate: Rational{24, 1}})
	if err != nil {
		t.Fatal(err)
	}
	var want []byte
	for i := range n {
		col, a := fgFrames(t, frame.YUV420P, w, h, i)
		if err := enc.Write(ctx, col, a); err != nil {
			t.Fatal(err)
		}
		for y := range h {
			want = append(want, a.Planes[0][y*a.Strides[0]:y*a.Strides[0]+w]...)
		}
	}
	if err := enc.Close(); err != nil {
		t.Fatal(err)
	}
	probe, err := exec.Command("ffprobe", "-v", "error", "-select_streams", "v:0", "-show_entries",
		"stream=codec_name,profile,pix_fmt,width,height,nb_frames", "-of", "default=nw=1", path).Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"codec_name=prores", "profile=4444", "pix_fmt=yuva444p", "width=64", "height=32", "nb_frames=3"} {
		if !strings.Contains(string(probe), s) {
			t.Errorf("ffprobe lacks %q:\n%s", s, probe)
		}
	}
	if d := maxDiff(t, ffmpegAlpha(t, path), want); d > 1 {
		t.Errorf("alpha differs by up to %d code values", d)
	}
	// Premultiplied: where alpha is 0 the colour is black (RGB 0).
	rgb, err := exec.Command("ffmpeg", "-v", "error", "-i", path, "-frames:v", "1", "-f", "rawvideo", "-pix_fmt", "rgba", "-").Output()
	if err != nil || len(rgb) != w*h*4 {
		t.Fatalf("rgba: %v, %d bytes", err, len(rgb))
	}
	// Frame 0: alpha at (0,0) is 0, at (63, 3) is 255.
	if p := rgb[0:4]; p[0] > 2 || p[1] > 2 || p[2] > 2 || p[3] != 0 {
		t.Errorf("pixel with alpha 0 is %v, want black", p)
	}
	if p := rgb[(3*w+63)*4:]; p[3] != 255 || p[0]+p[1]+p[2] < 30 {
		t.Errorf("opaque pixel is %v", p[:4])
	}
}

// TestForegroundPNG: an RGBA PNG with the matte as alpha exactly and the
// colour premultiplied.
func TestForegroundPNG(t *testing.T) {
	ctx := context.Background()
	const w, h = 64, 16
	path := filepath.Join(t.TempDir(), "foreground.png")
	enc, err := NewForegroundEncoder(ctx, path, ForegroundOptions{Width: w, Height: h})
	if err != nil {
		t.Fatal(err)
	}
	col, a := fgFrames(t, frame.RGB24, w, h, 0)
	if err := enc.Write(ctx, col, a); err != nil {
		t.Fatal(err)
	}
	if err := enc.Close(); err != nil {
		t.Fatal(err)
	}
	var want []byte
	for y := range h {
		want = append(want, a.Planes[0][y*a.Strides[0]:y*a.Strides[0]+w]...)
	}
	if d := maxDiff(t, ffmpegAlpha(t, path), want); d > 1 {
		t.Errorf("alpha differs by up to %d code values", d)
	}
	b, _ := os.ReadFile(path)
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	n, ok := img.(*image.NRGBA)
	if !ok {
		t.Fatalf("png decodes as %T, want RGBA with 8-bit channels", img)
	}
	for y := range h {
		for x := range w {
			av := uint32(a.Planes[0][y*a.Strides[0]+x])
			for c := range 3 {
				src := uint32(col.Planes[0][y*col.Strides[0]+3*x+c])
				if got, want := n.Pix[y*n.Stride+4*x+c], uint8((src*av+127)/255); got != want {
					t.Fatalf("(%d,%d) channel %d = %d, want premultiplied %d", x, y, c, got, want)
				}
			}
		}
	}
}
