package codec

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/asticode/go-astiav"
	"github.com/vfxrender/vfx/frame"
)

// inputs returns the same file as a Path input and as an Open input.
func inputs(t *testing.T, path string) map[string]Input {
	b := readFile(t, path)
	return map[string]Input{"path": FileInput(path), "open": bytesInput(b)}
}

func TestMP4RoundTrip(t *testing.T) {
	cases := []struct {
		name string
		spec mp4Spec
	}{
		{"ultrafast-tb1/25", mp4Spec{w: 64, h: 48, n: 10, preset: "ultrafast"}},
		{"medium-bframes-tb1/12800", mp4Spec{w: 64, h: 48, n: 10, preset: "medium", tb: Rational{1, 12800}, ptsStep: 512}},
		{"bt709-fullrange", mp4Spec{w: 64, h: 48, n: 4, cs: frame.BT709, full: true}},
		{"rgb24-input", mp4Spec{w: 64, h: 48, n: 3, input: frame.RGB24, cs: frame.BT709}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := tmpPath(t, "rt.mp4")
			src := writeMP4(t, p, c.spec)
			for how, in := range inputs(t, p) {
				t.Run(how, func(t *testing.T) {
					info, err := Probe(context.Background(), in, DefaultLimits())
					if err != nil {
						t.Fatal(err)
					}
					want := Info{Kind: KindVideo, Container: "mp4", Codec: "h264", Width: 64, Height: 48,
						DisplayWidth: 64, DisplayHeight: 48, FrameRate: Rational{25, 1}, TimeBase: info.TimeBase,
						Frames: c.spec.n, PixelFormat: "yuv420p", ColorSpace: c.spec.cs, FullRange: c.spec.full}
					if c.spec.full {
						want.PixelFormat = "yuvj420p" // FFmpeg 5.1's h264 decoder names full range so
					}
					if info != want {
						t.Fatalf("probe:\n got %+v\nwant %+v", info, want)
					}
					dinfo, got := decodeAll(t, in, DecodeOptions{Format: c.spec.input})
					if dinfo != info {
						t.Fatalf("decoder info %+v != probe %+v", dinfo, info)
					}
					if len(got) != len(src) {
						t.Fatalf("decoded %d frames, wrote %d", len(got), len(src))
					}
					tb := c.spec.tb
					if tb == (Rational{}) {
						tb = Rational{1, 25}
					}
					for i := range got {
						wantPTS := astiav.RescaleQ(src[i].PTS, tb.av(), info.TimeBase.av())
						if got[i].PTS != wantPTS {
							t.Errorf("frame %d: pts %d, want %d (%d in %v)", i, got[i].PTS, wantPTS, src[i].PTS, tb)
						}
						if got[i].Format != src[i].Format || got[i].Width != 64 || got[i].Height != 48 {
							t.Fatalf("frame %d: %v %dx%d", i, got[i].Format, got[i].Width, got[i].Height)
						}
						if got[i].Format == frame.YUV420P && (got[i].ColorSpace != c.spec.cs || got[i].FullRange != c.spec.full) {
							t.Errorf("frame %d: tagged %v full=%v", i, got[i].ColorSpace, got[i].FullRange)
						}
						for p := 0; p < src[i].Format.NumPlanes(); p++ {
							mean, mx := planeDiff(got[i], src[i], p)
							if mean > 3 || mx > 64 {
								t.Errorf("frame %d plane %d: mean diff %.2f max %d", i, p, mean, mx)
							}
						}
					}
				})
			}
		})
	}
}

func TestPNGRoundTrip(t *testing.T) {
	for _, c := range []struct {
		name   string
		format frame.PixelFormat
		gray   bool
		pixfmt string
	}{
		{"rgb24", frame.RGB24, false, "rgb24"},
		{"gray8", frame.Gray8, true, "gray"},
		{"rgb24-as-gray", frame.RGB24, true, "gray"},
	} {
		t.Run(c.name, func(t *testing.T) {
			src := newFrame(t, c.format, 63, 47)
			pattern(src, 1)
			p := tmpPath(t, "x.png")
			writePNG(t, p, src, c.gray)
			for how, in := range inputs(t, p) {
				t.Run(how, func(t *testing.T) {
					info, err := Probe(context.Background(), in, DefaultLimits())
					if err != nil {
						t.Fatal(err)
					}
					want := Info{Kind: KindImage, Container: "png", Codec: "png", Width: 63, Height: 47,
						DisplayWidth: 63, DisplayHeight: 47, FrameRate: Rational{0, 1}, TimeBase: Rational{0, 1},
						Frames: 1, PixelFormat: c.pixfmt, ColorSpace: frame.BT601, FullRange: true}
					if info != want {
						t.Fatalf("probe:\n got %+v\nwant %+v", info, want)
					}
					outFmt := c.format
					if c.gray {
						outFmt = frame.Gray8
					}
					_, got := decodeAll(t, in, DecodeOptions{Format: outFmt})
					if len(got) != 1 {
						t.Fatalf("decoded %d frames", len(got))
					}
					if got[0].PTS != 0 {
						t.Errorf("pts %d", got[0].PTS)
					}
					if c.format == outFmt {
						if mean, mx := planeDiff(got[0], src, 0); mx != 0 {
							t.Errorf("lossless png differs: mean %.2f max %d", mean, mx)
						}
					} else {
						// BT.601 luma of the pattern's first pixel row.
						o := src.Planes[0]
						y := 0.299*float64(o[30]) + 0.587*float64(o[31]) + 0.114*float64(o[32])
						if g := float64(got[0].Planes[0][10]); !near(g, y, 2) {
							t.Errorf("gray of rgb: %v, want %.1f", g, y)
						}
					}
				})
			}
		})
	}
}

func TestGrayMP4Matte(t *testing.T) {
	p := tmpPath(t, "alpha.mp4")
	src := writeMP4(t, p, mp4Spec{w: 64, h: 48, n: 3, input: frame.Gray8, gray: true, preset: "veryfast"})
	info, err := Probe(context.Background(), FileInput(p), DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	if !info.FullRange || info.PixelFormat != "yuv420p" && info.PixelFormat != "yuvj420p" {
		t.Fatalf("gray mp4: %+v", info)
	}
	_, got := decodeAll(t, FileInput(p), DecodeOptions{Format: frame.Gray8})
	if len(got) != 3 {
		t.Fatalf("%d frames", len(got))
	}
	for i := range got {
		if mean, mx := planeDiff(got[i], src[i], 0); mean > 2 || mx > 128 {
			t.Errorf("frame %d: mean %.2f max %d", i, mean, mx)
		}
		// The centre is kept (255), the corner replaced (0).
		c := got[i].Planes[0][24*64+32]
		k := got[i].Planes[0][0]
		if c < 250 || k > 5 {
			t.Errorf("frame %d: centre %d corner %d", i, c, k)
		}
	}
	// Chroma is neutral.
	_, yuv := decodeAll(t, FileInput(p), DecodeOptions{Format: frame.YUV420P})
	for _, v := range yuv[0].Planes[1] {
		if v < 126 || v > 130 {
			t.Fatalf("chroma %d, want 128", v)
		}
	}
}

func TestDecodeScaleAndFormats(t *testing.T) {
	p := tmpPath(t, "s.mp4")
	writeMP4(t, p, mp4Spec{w: 64, h: 48, n: 2})
	for _, c := range []struct {
		opts DecodeOptions
		w, h int
	}{
		{DecodeOptions{Format: frame.YUV420P, Width: 32, Height: 24}, 32, 24},
		{DecodeOptions{Format: frame.RGB24, Width: 128, Height: 96}, 128, 96},
		{DecodeOptions{Format: frame.Gray8, Width: 33}, 33, 25},
		{DecodeOptions{Format: frame.RGB24, Height: 12}, 16, 12},
		{DecodeOptions{Format: frame.YUV420P, Width: 31, Height: 17}, 31, 17},
	} {
		t.Run(fmt.Sprintf("%v-%dx%d", c.opts.Format, c.w, c.h), func(t *testing.T) {
			_, got := decodeAll(t, FileInput(p), c.opts)
			if len(got) != 2 {
				t.Fatalf("%d frames", len(got))
			}
			for _, f := range got {
				if f.Format != c.opts.Format || f.Width != c.w || f.Height != c.h {
					t.Fatalf("got %v %dx%d", f.Format, f.Width, f.Height)
				}
				if err := f.Validate(); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
	if _, err := NewDecoder(context.Background(), FileInput(p), DefaultLimits(), DecodeOptions{Width: -1}); err == nil {
		t.Error("negative width accepted")
	}
}

// TestDecoderReusesFrame checks that Next fills a reused HostFrame.
func TestDecoderReusesFrame(t *testing.T) {
	p := tmpPath(t, "r.mp4")
	writeMP4(t, p, mp4Spec{w: 64, h: 48, n: 5})
	ctx := context.Background()
	d, err := NewDecoder(ctx, FileInput(p), DefaultLimits(), DecodeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	f := &frame.HostFrame{}
	var first *byte
	n := 0
	for ; ; n++ {
		err := d.Next(ctx, f)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if first == nil {
			first = &f.Planes[0][0]
		} else if &f.Planes[0][0] != first {
			t.Error("plane reallocated")
		}
	}
	if n != 5 {
		t.Fatalf("%d frames", n)
	}
	if err := d.Next(ctx, f); !errors.Is(err, io.EOF) {
		t.Fatalf("after EOF: %v", err)
	}
	d.Close()
	if err := d.Next(ctx, f); err == nil {
		t.Fatal("Next after Close succeeded")
	}
}

func TestEncoderVariants(t *testing.T) {
	t.Run("rgb24-to-gray-mp4", func(t *testing.T) {
		p := tmpPath(t, "g.mp4")
		src := writeMP4(t, p, mp4Spec{w: 64, h: 48, n: 2, input: frame.RGB24, gray: true})
		_, got := decodeAll(t, FileInput(p), DecodeOptions{Format: frame.Gray8})
		s := src[0].Planes[0]
		sum := 0.0
		for i, g := range got[0].Planes[0] {
			y := 0.299*float64(s[3*i]) + 0.587*float64(s[3*i+1]) + 0.114*float64(s[3*i+2])
			sum += abs(float64(g) - y)
		}
		if mean := sum / float64(64*48); mean > 2 {
			t.Errorf("gray mp4 of rgb: mean luma error %.2f", mean)
		}
	})
	t.Run("faststart", func(t *testing.T) {
		p := tmpPath(t, "f.mp4")
		ctx := context.Background()
		e, err := NewEncoder(ctx, p, EncoderOptions{Container: "mp4", Width: 16, Height: 16, Input: frame.YUV420P,
			FrameRate: Rational{30000, 1001}, Preset: "ultrafast", Threads: 1, CRF: 30, FastStart: true})
		if err != nil {
			t.Fatal(err)
		}
		f := newFrame(t, frame.YUV420P, 16, 16)
		for i := 0; i < 3; i++ {
			f.PTS = int64(i)
			if err := e.Write(ctx, f); err != nil {
				t.Fatal(err)
			}
		}
		if err := e.Close(); err != nil {
			t.Fatal(err)
		}
		b := string(readFile(t, p))
		if m, d := strings.Index(b, "moov"), strings.Index(b, "mdat"); m < 0 || d < 0 || m > d {
			t.Errorf("moov at %d, mdat at %d", m, d)
		}
		info, err := Probe(ctx, FileInput(p), DefaultLimits())
		if err != nil || info.FrameRate != (Rational{30000, 1001}) || info.Frames != 3 {
			t.Errorf("probe %+v %v", info, err)
		}
	})
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}
