package codec

import (
	"bytes"
	"context"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vfxrender/vfx/frame"
)

func TestMain(m *testing.M) {
	Quiet()
	os.Exit(m.Run())
}

// pattern fills f with a smooth moving test picture (frame index i).
func pattern(f *frame.HostFrame, i int) {
	switch f.Format {
	case frame.YUV420P:
		for y := 0; y < f.Height; y++ {
			for x := 0; x < f.Width; x++ {
				f.Planes[0][y*f.Strides[0]+x] = byte(32 + (x*160/f.Width+y*40/f.Height+i*3)%190)
			}
		}
		cw, ch := f.PlaneDims(1)
		for y := 0; y < ch; y++ {
			for x := 0; x < cw; x++ {
				f.Planes[1][y*f.Strides[1]+x] = byte(64 + x*128/cw)
				f.Planes[2][y*f.Strides[2]+x] = byte(64 + y*128/ch)
			}
		}
	case frame.RGB24:
		for y := 0; y < f.Height; y++ {
			for x := 0; x < f.Width; x++ {
				o := y*f.Strides[0] + 3*x
				f.Planes[0][o] = byte(x * 255 / max(1, f.Width-1))
				f.Planes[0][o+1] = byte(y * 255 / max(1, f.Height-1))
				f.Planes[0][o+2] = byte(min(255, (x+y)*240/(f.Width+f.Height)+i))
			}
		}
	case frame.Gray8:
		for y := 0; y < f.Height; y++ {
			for x := 0; x < f.Width; x++ {
				v := byte(0)
				if (x-f.Width/2)*(x-f.Width/2)+(y-f.Height/2)*(y-f.Height/2) < f.Height*f.Height/9 {
					v = 255
				}
				f.Planes[0][y*f.Strides[0]+x] = v
			}
		}
	}
}

func newFrame(t testing.TB, pf frame.PixelFormat, w, h int) *frame.HostFrame {
	t.Helper()
	f, err := frame.New(pf, w, h)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// planeDiff returns the mean and max absolute difference of plane i.
func planeDiff(a, b *frame.HostFrame, i int) (mean float64, mx int) {
	w, h := a.PlaneDims(i)
	sum := 0
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			d := int(a.Planes[i][y*a.Strides[i]+x]) - int(b.Planes[i][y*b.Strides[i]+x])
			if d < 0 {
				d = -d
			}
			sum += d
			mx = max(mx, d)
		}
	}
	return float64(sum) / float64(w*h), mx
}

type mp4Spec struct {
	w, h, n   int
	rate, tb  Rational
	preset    string
	input     frame.PixelFormat
	gray      bool
	audioFrom *Input
	cs        frame.ColorSpace
	full      bool
	firstPTS  int64
	ptsStep   int64
}

// writeMP4 encodes s.n pattern frames into path and returns them.
func writeMP4(t testing.TB, path string, s mp4Spec) []*frame.HostFrame {
	t.Helper()
	if s.rate == (Rational{}) {
		s.rate = Rational{25, 1}
	}
	if s.tb == (Rational{}) {
		s.tb = Rational{1, 25}
	}
	if s.ptsStep == 0 {
		s.ptsStep = 1
	}
	if s.preset == "" {
		s.preset = "ultrafast"
	}
	if s.input == 0 {
		s.input = frame.YUV420P
	}
	ctx := context.Background()
	enc, err := NewEncoder(ctx, path, EncoderOptions{Container: "mp4", Width: s.w, Height: s.h, Input: s.input,
		Gray: s.gray, FrameRate: s.rate, TimeBase: s.tb, Preset: s.preset, AudioFrom: s.audioFrom,
		ColorSpace: s.cs, FullRange: s.full})
	if err != nil {
		t.Fatal(err)
	}
	var out []*frame.HostFrame
	for i := 0; i < s.n; i++ {
		f := newFrame(t, s.input, s.w, s.h)
		pattern(f, i)
		f.PTS = s.firstPTS + int64(i)*s.ptsStep
		if err := enc.Write(ctx, f); err != nil {
			t.Fatal(err)
		}
		out = append(out, f)
	}
	if err := enc.Close(); err != nil {
		t.Fatal(err)
	}
	if err := enc.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	return out
}

func writePNG(t testing.TB, path string, f *frame.HostFrame, gray bool) {
	t.Helper()
	ctx := context.Background()
	enc, err := NewEncoder(ctx, path, EncoderOptions{Container: "png", Width: f.Width, Height: f.Height, Input: f.Format, Gray: gray})
	if err != nil {
		t.Fatal(err)
	}
	if err := enc.Write(ctx, f); err != nil {
		t.Fatal(err)
	}
	if err := enc.Close(); err != nil {
		t.Fatal(err)
	}
}

// readFrames reads d's frames to the end.
func readFrames(t testing.TB, ctx context.Context, d *Decoder) []*frame.HostFrame {
	t.Helper()
	var out []*frame.HostFrame
	for {
		f := &frame.HostFrame{}
		err := d.Next(ctx, f)
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatalf("frame %d: %v", len(out), err)
		}
		out = append(out, f)
	}
}

// decodeAll decodes every frame of in.
func decodeAll(t testing.TB, in Input, opts DecodeOptions) (Info, []*frame.HostFrame) {
	t.Helper()
	ctx := context.Background()
	d, err := NewDecoder(ctx, in, DefaultLimits(), opts)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	out := readFrames(t, ctx, d)
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	return d.Info(), out
}

type nopCloser struct{ *bytes.Reader }

func (nopCloser) Close() error { return nil }

// bytesInput serves b through Input.Open.
func bytesInput(b []byte) Input {
	return Input{Open: func() (io.ReadSeekCloser, error) { return nopCloser{bytes.NewReader(b)}, nil }}
}

func readFile(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// needFFmpeg returns the ffmpeg CLI path or skips, saying why.
func needFFmpeg(t testing.TB, encoders ...string) string {
	t.Helper()
	p, err := exec.LookPath("ffmpeg")
	if err != nil {
		t.Skip("skipping: the ffmpeg command is not on PATH (needed to make this fixture)")
	}
	if len(encoders) > 0 {
		out, err := exec.Command(p, "-hide_banner", "-encoders").Output()
		if err != nil {
			t.Skipf("skipping: ffmpeg -encoders failed: %v", err)
		}
		for _, e := range encoders {
			if !strings.Contains(string(out), " "+e+" ") {
				t.Skipf("skipping: this ffmpeg has no %s encoder", e)
			}
		}
	}
	return p
}

// ffmpeg runs the CLI with args in dir.
func ffmpeg(t testing.TB, dir string, args ...string) {
	t.Helper()
	p := needFFmpeg(t)
	cmd := exec.Command(p, append([]string{"-hide_banner", "-loglevel", "error", "-y"}, args...)...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("ffmpeg %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

func tmpPath(t testing.TB, name string) string { return filepath.Join(t.TempDir(), name) }

func near(a, b, tol float64) bool { return math.Abs(a-b) <= tol }
